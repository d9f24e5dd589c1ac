// Loading a plugin DLL on Windows (core/cross/README.md): the Win32 side of
// trusted_acl.hpp. Private to libsbx; compiled only on Windows.
//
// load_trusted_module(path):
//  1. reads the owner and DACL (GetNamedSecurityInfoW) of every directory from the drive root
//     down to the plugin directory and of the file, and judges them with acl::check_chain: only
//     SYSTEM, Administrators, TrustedInstaller and the installing owner may change any of them
//     (creating entries is tolerated above the trust root);
//  2. opens the file with FILE_SHARE_READ only, and keeps it open until the module is mapped:
//     while that handle lives nobody can open the file for writing, delete it or rename it, so
//     the file checked is the file loaded;
//  3. LoadLibraryExW(path, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_SYSTEM32): the
//     module's own imports come from its directory and System32 only, never the current
//     directory or PATH;
//  4. compares the mapped module's file (GetModuleFileNameW, opened again) with the held one:
//     volume serial number, file index and final path (acl::loaded_module_problem).
// The module is never unloaded (FreeLibrary is not called), like RTLD_NODELETE on POSIX.
#pragma once

#ifdef _WIN32

#include <string>

#include "plugins/trusted_acl.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx::plugins::win32 {

// The owner and DACL of the file or directory `path` (UTF-8, "C:/..." or "C:\..."), as the model
// trusted_acl.hpp judges.
Result<acl::SecurityModel> read_security(const std::string& path);

// The string SID of the owner of `path` (for Trustees::installing_owner: the owner of sbx.exe).
Result<std::string> owner_sid(const std::string& path);

// The identity (volume, file index, final path) of the file `path` names.
Result<acl::FileIdentity> file_identity(const std::string& path);

// Steps 1 to 4 above. `trust_root` is the directory plugins are loaded from (the directory next
// to sbx.exe); `path` must be inside it. Returns the module handle as an opaque pointer.
// Every refusal (the chain, the file, the mapped module not being the checked file) is kind
// refused; LoadLibraryExW's own failure is host_failure, so the loader tells them apart.
Result<void*> load_trusted_module(const std::string& path, const std::string& trust_root,
                                  const acl::Trustees& trustees);

}  // namespace sbx::plugins::win32

#endif  // _WIN32
