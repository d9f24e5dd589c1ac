// Installation-relative paths and the host-services table. The trusted plugin directory and
// the stage-2 helper are found next to the real location of libsbx (build tree and install
// prefix share the layout); no environment variable can change them.
#pragma once

#include <sys/types.h>

#include <string>

#include "sbx/sdk/abi.h"
#include "sbx/sdk/result.hpp"

namespace sbx {

struct InstallLayout {
  std::string libsbx_path;   // canonical path of the loaded libsbx
  uid_t libsbx_owner = 0;
  std::string plugin_dir;    // <libdir>/sbx/backends
  std::string stage2_path;   // <prefix>/libexec/sbx/sbx-stage2
};

Result<InstallLayout> install_layout();

// The process-wide host table handed to plugins (logging through spdlog, spawn_and_wait,
// the stage-2 path). Valid for the life of the process.
const sbx_host_v1* host_services(const InstallLayout& layout);

const char* sbx_version();

}  // namespace sbx
