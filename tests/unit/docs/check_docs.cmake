# Keeps the tree's documentation promises (HACKING.md, "Rules"):
#  - the top-level documents a newcomer starts from exist: LICENSE, CHANGELOG.md, HACKING.md,
#    SECURITY.md;
#  - no product source (every top-level folder but tests/, bench/, docs/ and build trees) quotes a
#    timing of the machine it was measured on ("on this guest", "on this machine", "measured
#    here", ...): a comment says why and cites the man page, kernel or bwrap release, and
#    figures live in bench/README.md (current) and CHANGELOG.md (history);
#  - docs/ARCHITECTURE.md stays a map: at most 400 lines (mechanism detail belongs in the folder
#    READMEs), and every repository path it names in backticks and every relative link in it
#    exists, so the map cannot rot when code moves.
# First it checks itself on a planted tree (WORK_DIR), so that it cannot pass by finding nothing.
#
#   cmake -DSOURCE_DIR=<tree> -DWORK_DIR=<scratch> -P check_docs.cmake
cmake_minimum_required(VERSION 3.25)

set(_required_documents LICENSE CHANGELOG.md HACKING.md SECURITY.md docs/ARCHITECTURE.md)
set(_map docs/ARCHITECTURE.md)
set(_map_line_budget 400)
set(_phrases "on this guest" "on this machine" "on this vm" "measured here" "this pvm guest")
set(_skipped_folders tests bench docs)
set(_source_globs *.c *.cc *.cpp *.h *.hpp *.inc *.py *.js *.ts *.sh *.cmake *.in CMakeLists.txt)

# Appends to the list named by `out` one line per problem of the map `root`/`_map`: over its line
# budget, a backticked repository path or a relative link that names nothing. A repository path
# is a backticked word with a `/` that starts with a plain name (`core/src/run/run.cpp`, not
# `/proc`, `~/.config`, `<libdir>/...`, `sbx exec`); a placeholder (`plugins/<name>/`), a brace
# list or a `*` must match at least one entry.
function(_check_map root out)
  set(problems "")
  if(NOT EXISTS "${root}/${_map}")
    set(${out} "" PARENT_SCOPE)  # reported as a missing document
    return()
  endif()
  file(READ "${root}/${_map}" text)
  # `;` and square brackets would split or glue CMake's list elements: a link's `](` becomes a
  # marker, other brackets `!` (no repository path holds one).
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "](" "@link(" text "${text}")
  string(REGEX REPLACE "[][]" "!" text "${text}")
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines lines)
  if(lines GREATER _map_line_budget)
    list(APPEND problems "${_map}: ${lines} lines, over the budget of ${_map_line_budget}: \
move mechanism detail to the folder's README")
  endif()
  get_filename_component(map_dir "${root}/${_map}" DIRECTORY)
  string(REGEX MATCHALL "`[^`\n]+`" quoted "${text}")
  string(REGEX MATCHALL "@link\\([^)#\n]+[)#]" links "${text}")
  set(names "")
  foreach(word IN LISTS quoted)
    string(REGEX REPLACE "^`(.*)`$" "\\1" word "${word}")
    if(word MATCHES "^[A-Za-z0-9_.-]+/[^ \t]*$")
      list(APPEND names "${word}|${root}/${word}")
    endif()
  endforeach()
  foreach(link IN LISTS links)
    string(REGEX REPLACE "^@link\\((.*)[)#]$" "\\1" link "${link}")
    if(NOT link MATCHES "^[a-z]+:")
      list(APPEND names "${link}|${map_dir}/${link}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  foreach(entry IN LISTS names)
    string(REGEX REPLACE "\\|.*$" "" name "${entry}")
    string(REGEX REPLACE "^[^|]*\\|" "" path "${entry}")
    string(REGEX REPLACE "<[^>/]*>|\\{[^}/]*\\}" "*" pattern "${path}")
    string(REGEX REPLACE "/+$" "" pattern "${pattern}")
    file(GLOB found LIST_DIRECTORIES true "${pattern}")
    if(NOT found)
      list(APPEND problems "${_map} names `${name}`, which does not exist")
    endif()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

# Appends one line per problem found in `root` to the list named by `out`.
function(_check_tree root out)
  set(problems "")
  foreach(document IN LISTS _required_documents)
    if(NOT EXISTS "${root}/${document}")
      list(APPEND problems "missing ${document} at the top of the tree")
    endif()
  endforeach()
  file(GLOB folders LIST_DIRECTORIES true RELATIVE "${root}" "${root}/*")
  set(sources "")
  foreach(folder IN LISTS folders)
    if(NOT IS_DIRECTORY "${root}/${folder}" OR folder MATCHES "^(\\.|build)" OR
       folder IN_LIST _skipped_folders)
      continue()
    endif()
    set(globs "")
    foreach(glob IN LISTS _source_globs)
      list(APPEND globs "${root}/${folder}/${glob}")
    endforeach()
    file(GLOB_RECURSE found LIST_DIRECTORIES false ${globs})
    list(APPEND sources ${found})
  endforeach()
  list(APPEND sources "${root}/CMakeLists.txt")
  list(JOIN _phrases "|" any_phrase)
  foreach(source IN LISTS sources)
    file(RELATIVE_PATH name "${root}" "${source}")
    if(NOT EXISTS "${source}" OR name MATCHES "(^|/)(node_modules|build[^/]*)/")
      continue()  # a binding's own build tree or downloaded packages are not sbx's sources
    endif()
    # Each file read once, in lower case, with `;` (CMake's list separator) shown as `,`.
    file(READ "${source}" text)
    string(TOLOWER "${text}" text)
    string(REPLACE ";" "," text "${text}")
    set(hits "")
    foreach(phrase IN LISTS _phrases)
      string(FIND "${text}" "${phrase}" at)
      if(NOT at EQUAL -1)  # the lines, only for a file that has a phrase (a regex scan is slow)
        string(REGEX MATCHALL "[^\n]*(${any_phrase})[^\n]*" hits "${text}")
        break()
      endif()
    endforeach()
    foreach(hit IN LISTS hits)
      string(STRIP "${hit}" hit)
      list(APPEND problems "${name}: ${hit}")
    endforeach()
  endforeach()
  _check_map("${root}" map_problems)
  list(APPEND problems ${map_problems})
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

if(NOT SOURCE_DIR OR NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -DWORK_DIR=<scratch> -P check_docs.cmake")
endif()

# The self-check: a tree with LICENSE, a map and one planted timing in a product comment must
# give exactly seven problems (three missing documents, the comment, the map's length, its
# backticked path and its link that name nothing); a timing under tests/, bench/ or a build
# tree is not product code, and the map's other names exist.
set(planted "${WORK_DIR}/planted")
file(REMOVE_RECURSE "${planted}")
file(WRITE "${planted}/LICENSE" "licence\n")
file(WRITE "${planted}/CMakeLists.txt" "project(planted)\n")
file(WRITE "${planted}/core/src/a.cpp" "int f();  // ~0.5 ms On This Guest\n")
file(WRITE "${planted}/tests/a_test.cpp" "// measured here, in a test: allowed\n")
file(WRITE "${planted}/bench/README.md" "measured on this machine\n")
file(WRITE "${planted}/bindings/node/build/generated.cpp" "// measured here, generated\n")
string(REPEAT "line\n" 400 long)
file(WRITE "${planted}/docs/ARCHITECTURE.md"
     "# map\n`core/src/a.cpp`, `core/<part>/a.cpp`, `core/src/{a,b}.cpp`, `tests/*.cpp`, \
`/proc/self`, `sbx exec`, [licence](../LICENSE#x), [web](https://x/y)\n\
`core/src/gone.cpp` and [gone](../gone.md), twice: `core/src/gone.cpp`\n${long}")
_check_tree("${planted}" self_problems)
list(LENGTH self_problems self_count)
if(NOT self_count EQUAL 7 OR NOT self_problems MATCHES "core/src/a.cpp: .*on this guest" OR
   NOT self_problems MATCHES "403 lines, over the budget" OR
   NOT self_problems MATCHES "`core/src/gone.cpp`, which does not exist" OR
   NOT self_problems MATCHES "`../gone.md`, which does not exist")
  list(JOIN self_problems "\n  " shown)
  message(FATAL_ERROR
          "the check does not see what was planted (${self_count} problems):\n  ${shown}")
endif()
file(REMOVE_RECURSE "${planted}")

_check_tree("${SOURCE_DIR}" problems)
if(problems)
  list(LENGTH problems count)
  list(JOIN problems "\n  " shown)
  message(FATAL_ERROR "${count} documentation problem(s) (HACKING.md, \"Rules\"):\n  ${shown}")
endif()
message(STATUS "documents present; no product source quotes a timing of the machine it ran on; "
               "${_map} is within ${_map_line_budget} lines and names only what exists")
