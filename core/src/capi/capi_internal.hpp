// What the C API's tests reach beyond sbx/sbx.h. Private to libsbx: no front end exposes it.
#pragma once

#include <string>

#include "sbx/core/settings.hpp"

struct sbx_manager;

namespace sbx::capi {

// sbx_manager_new_with_settings with the settings read from `sources` instead of the production
// places (settings::current_sources). Tests point the managed scope at a file they own; the
// public entry point always reads /etc/sbx/managed.json, so an embedded agent cannot choose its
// administrator's locks.
// `plugin_dirs`: as sbx_manager_options (NULL-terminated, NULL for none).
// The manager (release it with sbx_manager_free), or nullptr with `error` set.
sbx_manager* make_manager_with_sources(const char* backends, const settings::Sources& sources,
                                       const char* settings_json, std::string& error,
                                       const char* const* plugin_dirs = nullptr);

}  // namespace sbx::capi
