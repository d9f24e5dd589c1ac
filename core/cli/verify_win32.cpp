// `sbx backends --verify` in sbx.exe (the mingw cross build, core/cross/cli.cmake): the
// conformance kit attacks through /bin/sh and a POSIX helper (verify.cpp), so on Windows it
// refuses with a message that says so.
#include "verify.hpp"

namespace sbx::cli {

Result<VerifyReport> verify_backend(const LoadedPlugin& plugin, const ProbeReport& /*probe*/,
                                    const GlobalOptions& /*globals*/) {
  return Error{"`sbx backends --verify " + plugin.name +
               "` runs on Linux only for now (its attacks are POSIX shell commands); run it on a "
               "Linux host"};
}

std::string verify_report_text(const VerifyReport& /*report*/) { return {}; }

}  // namespace sbx::cli
