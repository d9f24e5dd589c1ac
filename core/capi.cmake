# The C API of libsbx (core/include/sbx/sbx.h, implemented in core/src/capi/capi.cpp, which the
# source glob already compiles into libsbx). Installs the header to <includedir>/sbx/sbx.h.
# Included from core/CMakeLists.txt:  include("${CMAKE_CURRENT_SOURCE_DIR}/capi.cmake" OPTIONAL)
install(FILES "${CMAKE_CURRENT_LIST_DIR}/include/sbx/sbx.h"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/sbx"
        COMPONENT devel)
