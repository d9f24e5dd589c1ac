# Warning, hardening and sanitizer flags for sbx's own targets (never exported to vendors).
add_library(sbx_warnings INTERFACE)
add_library(sbx_hardening INTERFACE)

set(_sbx_common_warnings
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused
    # No -Wnull-dereference: at -O2 GCC 12 reports false positives inside inlined libstdc++
    # code called from CLI11 headers, which breaks the -Werror ci preset.
    -Woverloaded-virtual -Wconversion -Wsign-conversion -Wdouble-promotion
    -Wformat=2 -Wimplicit-fallthrough -Wmisleading-indentation)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND _sbx_common_warnings -Wduplicated-cond -Wduplicated-branches -Wlogical-op
       -Wsuggest-override)
endif()
target_compile_options(sbx_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:${_sbx_common_warnings}>)
if(SBX_WERROR)
  target_compile_options(sbx_warnings INTERFACE -Werror)
endif()

if(SBX_HARDENING AND NOT WIN32)
  target_compile_definitions(sbx_hardening INTERFACE _GLIBCXX_ASSERTIONS)
  target_compile_options(sbx_hardening INTERFACE -fstack-protector-strong
      $<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2>)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_compile_options(sbx_hardening INTERFACE -fcf-protection)
  endif()
  if(NOT APPLE)
    target_compile_options(sbx_hardening INTERFACE -fstack-clash-protection)
    target_link_options(sbx_hardening INTERFACE LINKER:-z,relro LINKER:-z,now
        LINKER:-z,noexecstack)
  endif()
endif()

if(SBX_SANITIZE)
  # Applied globally so plugins and fixtures are instrumented like the host.
  add_compile_options(-fsanitize=${SBX_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${SBX_SANITIZE})
endif()
