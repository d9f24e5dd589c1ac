// `sbx backends --verify NAME`: the conformance kit. Attacks each capability the named backend
// declares through real `sbx exec` runs forced onto it, and reports per capability: verified,
// failed (with the evidence) or not declared. What each capability means and how it is
// attacked: sdk/CAPABILITIES.md.
#pragma once

#include <string>

#include "cli.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::cli {

// Attacks `plugin`, whose probe answered `probe`, with the installed sbx executable itself
// (each attack a child `sbx --backends NAME exec --sandbox require ...`, with the --plugin-dir
// options of `globals`). An Error only when the kit cannot run at all (no scratch directory,
// no attack helper); every failed attack is in the report.
Result<VerifyReport> verify_backend(const LoadedPlugin& plugin, const ProbeReport& probe,
                                    const GlobalOptions& globals);

// The report as text: one line per capability, the evidence of each failed attack below it.
std::string verify_report_text(const VerifyReport& report);

}  // namespace sbx::cli
