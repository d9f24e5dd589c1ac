// Boost.JSON's implementation for the mingw-w64 cross build (core/cross/libsbx.cmake): Debian
// ships no Windows libboost_json, so the header-only form is compiled here, once.
#include <boost/json/src.hpp>
