# Cross-compiling for 64-bit Windows with Debian's mingw-w64 (package `mingw-w64`).
# Usage: cmake -S plugins/windows/cross -B <dir> -DCMAKE_TOOLCHAIN_FILE=<this file>
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

# The posix thread model is pinned: GCC 12's win32 model has no std::mutex, which googletest
# 1.12 needs. Targets link -static, so no winpthread DLL is needed at run time. The unsuffixed
# names are the fallback where only those exist.
find_program(SBX_MINGW_CXX NAMES x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-g++ REQUIRED)
find_program(SBX_MINGW_CC NAMES x86_64-w64-mingw32-gcc-posix x86_64-w64-mingw32-gcc REQUIRED)
find_program(SBX_MINGW_RC NAMES x86_64-w64-mingw32-windres)
set(CMAKE_CXX_COMPILER "${SBX_MINGW_CXX}")
set(CMAKE_C_COMPILER "${SBX_MINGW_CC}")
if(SBX_MINGW_RC)
  set(CMAKE_RC_COMPILER "${SBX_MINGW_RC}")
endif()

# Libraries and headers only from the mingw sysroot, never the Linux host's.
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
