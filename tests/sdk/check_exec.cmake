# sdk.example_exec: `sbx --backends firejail exec` with the workspace-write preset runs a command
# through the vendor's plugin, and the confinement is real: a write inside the workspace lands
# on the host, a write outside it and one into the protected .git fail and leave the host
# untouched, the command sees firejail's environment and no network interface but loopback.
# Then the honest refusal: with a protected name missing, sbx exits 125 without running it.
# The preset is used in its short JSON form without /tmp and $TMPDIR as writable roots: their
# protected names (/tmp/.git, ...) do not exist, and firejail cannot keep them uncreatable.
cmake_minimum_required(VERSION 3.25)
foreach(var SBX PLUGIN_DIR WORK OUTSIDE)
  if(NOT ${var})
    message(FATAL_ERROR "check_exec.cmake: -D${var}=... is required")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/sbx_json.cmake")
sbx_probe_firejail()
string(JSON available GET "${sbx_json}" backends ${firejail_index} available)
string(JSON summary GET "${sbx_json}" backends ${firejail_index} summary)
if(NOT available STREQUAL "ON")
  message("SKIPPED: firejail cannot run on this host: ${summary}")
  return()
endif()

# OUTSIDE must lie outside every writable root of workspace-write (cwd, /tmp, $TMPDIR).
foreach(root "/tmp" "$ENV{TMPDIR}" "${WORK}")
  if(root AND (OUTSIDE STREQUAL root OR OUTSIDE MATCHES "^${root}/"))
    message(FATAL_ERROR "test setup: ${OUTSIDE} lies in the writable root ${root}")
  endif()
endforeach()
set(ws "${WORK}/ws")
file(REMOVE_RECURSE "${WORK}" "${OUTSIDE}")
# Every protected name exists: firejail can keep existing ones read-only (see README).
file(MAKE_DIRECTORY "${ws}/.git" "${ws}/.codex" "${ws}/.agents" "${OUTSIDE}")
file(WRITE "${ws}/.git/HEAD" "ref: refs/heads/main\n")
set(policy "${WORK}/workspace-write.json")
file(WRITE "${policy}" [=[{ "version": 1, "preset": "workspace-write",
  "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true }
]=])

set(script [=[
echo inside > inside.txt || exit 10
if (echo x > "$1/escape.txt") 2>/dev/null; then exit 11; fi
if (echo x >> .git/HEAD) 2>/dev/null; then exit 12; fi
[ "${container:-}" = firejail ] || exit 13
[ "$(grep -c : /proc/net/dev)" = 1 ] || exit 14
exit 42]=])
execute_process(
    COMMAND "${SBX}" --plugin-dir "${PLUGIN_DIR}" --backends firejail exec
            --policy "${policy}" --cwd "${ws}" -- /bin/sh -c "${script}" sh "${OUTSIDE}"
    WORKING_DIRECTORY "${ws}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(codes "10 = write inside failed, 11 = write outside succeeded, 12 = .git writable, 13 = not inside firejail, 14 = network interfaces visible")
if(NOT rc EQUAL 42)
  message(FATAL_ERROR "sbx exec through firejail: exit ${rc}, expected 42 (${codes})\n"
                      "stdout: ${out}\nstderr: ${err}")
endif()
file(READ "${ws}/inside.txt" inside)
file(READ "${ws}/.git/HEAD" head)
if(NOT inside STREQUAL "inside\n" OR EXISTS "${OUTSIDE}/escape.txt" OR
   NOT head STREQUAL "ref: refs/heads/main\n")
  message(FATAL_ERROR "the host does not show the confinement: inside.txt='${inside}', "
                      "escape.txt present: see above, .git/HEAD='${head}'")
endif()
message(STATUS "ran through firejail: wrote ${ws}/inside.txt; ${OUTSIDE} and .git untouched")

# A protected name that does not exist cannot be kept uncreatable by firejail: refused, 125,
# and the command never runs.
file(REMOVE_RECURSE "${ws}/.codex")
execute_process(
    COMMAND "${SBX}" --plugin-dir "${PLUGIN_DIR}" --backends firejail exec
            --policy "${policy}" --cwd "${ws}" -- /bin/sh -c "echo ran > ran.txt"
    WORKING_DIRECTORY "${ws}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 125 OR EXISTS "${ws}/ran.txt" OR NOT err MATCHES "\\.codex")
  message(FATAL_ERROR "expected exit 125 naming .codex and no run; got exit ${rc}, "
                      "ran.txt present if the command ran\nstdout: ${out}\nstderr: ${err}")
endif()
message(STATUS "missing protected name refused: ${err}")
file(REMOVE_RECURSE "${WORK}" "${OUTSIDE}")
