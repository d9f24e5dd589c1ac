# ABI guard (cmake -DHEADER=<abi.h> -P check_abi_digest.cmake): the SHA-256 of abi.h, with the
# value of SBX_ABI_HEADER_SHA256 left empty, must equal that recorded value. Any edit to the
# header fails here until someone has looked at the ABI on purpose (Envoy-style ABI hash).
if(NOT HEADER)
  message(FATAL_ERROR "usage: cmake -DHEADER=<path to abi.h> -P check_abi_digest.cmake")
endif()
file(READ "${HEADER}" content)
# A checkout with CRLF line endings must hash like the committed file.
string(REPLACE "\r\n" "\n" content "${content}")
set(pattern "#define SBX_ABI_HEADER_SHA256 \"([0-9a-f]*)\"")
string(REGEX MATCH "${pattern}" line "${content}")
if(NOT line)
  message(FATAL_ERROR "${HEADER}: no '#define SBX_ABI_HEADER_SHA256 \"<hex>\"' line; restore it")
endif()
set(recorded "${CMAKE_MATCH_1}")
string(REGEX REPLACE "${pattern}" "#define SBX_ABI_HEADER_SHA256 \"\"" blanked "${content}")
string(SHA256 actual "${blanked}")
string(REGEX MATCH "#define SBX_ABI_MAJOR ([0-9]+)" _ "${content}")
set(major "${CMAKE_MATCH_1}")
string(REGEX MATCH "#define SBX_ABI_MINOR ([0-9]+)" _ "${content}")
set(minor "${CMAKE_MATCH_1}")
if(NOT actual STREQUAL recorded)
  message(FATAL_ERROR
      "sdk/include/sbx/sdk/abi.h changed (ABI ${major}.${minor}): its digest is ${actual}, the "
      "recorded one is '${recorded}'.\n"
      "Review the change against the plugin ABI before accepting it:\n"
      "  - appended a field at the end of a struct, or a new #define: bump SBX_ABI_MINOR;\n"
      "  - changed, reordered or removed anything: bump SBX_ABI_MAJOR and rename the entry\n"
      "    symbol (sbx_plugin_entry_v3);\n"
      "  - comments only: no bump.\n"
      "Then record the new digest (recompute it after any bump):\n"
      "  #define SBX_ABI_HEADER_SHA256 \"${actual}\"")
endif()
message(STATUS "abi.h digest matches (ABI ${major}.${minor}, ${actual})")
