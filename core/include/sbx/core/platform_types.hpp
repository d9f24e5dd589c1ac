// The few POSIX types libsbx's public headers name, on every host. On Windows there are no
// uids: ownership is judged by SID there (core/src/plugins/trusted_acl.hpp), and the uid fields
// of the headers (an install's owner, a trusted owner) stay at their defaults.
#pragma once

#ifdef _WIN32
namespace sbx {
using uid_t = unsigned int;
}  // namespace sbx
#else
#include <sys/types.h>
#endif
