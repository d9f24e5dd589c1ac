// `sbx backends [--probe] [--json]`: the loaded plugins, the rejected ones, and (with --probe)
// what each can do on this host.
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/caller.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/run_limits.hpp"
#include "text_table.hpp"
#include "verify.hpp"

namespace sbx::cli {
namespace {

struct BackendsOptions {
  bool probe = false;
  bool json = false;
  std::string verify;  // --verify NAME: the conformance kit (verify.hpp)
};

std::vector<BackendListing> list_backends(const PluginRegistry& registry, bool probe) {
  std::vector<BackendListing> out;
  for (const LoadedPlugin& plugin : registry.plugins()) {
    BackendListing listing{plugin.name, plugin.version, plugin.description, plugin.path, {}};
    listing.abi = plugin_abi(plugin);
    // Always a real probe (diagnostics never show a kept answer), which refreshes the kept one.
    if (probe) listing.probe = probe_and_keep(plugin);
    out.push_back(std::move(listing));
  }
  return out;
}

std::string status_marker(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "WARN";
    case CheckStatus::kFail:
      return "FAIL";
  }
  return "????";
}

// "  enforces: a, b, c" wrapped before 100 columns, continuation lines aligned after the label.
std::string enforces_line(const std::vector<std::string>& caps) {
  const std::string label = "  enforces: ";
  if (caps.empty()) return label + "nothing here\n";
  std::string out = label;
  std::size_t column = label.size();
  for (std::size_t i = 0; i < caps.size(); ++i) {
    const std::string item = caps[i] + (i + 1 < caps.size() ? "," : "");
    if (column > label.size() && column + 1 + item.size() > 100) {
      out += "\n" + std::string(label.size(), ' ');
      column = label.size();
    } else if (column > label.size()) {
      out += ' ';
      ++column;
    }
    out += item;
    column += item.size();
  }
  return out + "\n";
}

void print_probed(const BackendListing& listing) {
  const ProbeReport& report = *listing.probe;
  std::cout << printable(listing.name) << ' ' << printable(listing.version) << "  "
            << (report.available ? "available" : "NOT AVAILABLE") << " - "
            << printable(report.summary) << '\n';
  std::vector<std::vector<std::string>> rows = {
      {"path:", listing.path}, {"abi:", listing.abi}, {"about:", listing.description}};
  std::cout << render_table(rows, "  ");
  std::vector<std::vector<std::string>> checks;
  for (const ProbeCheck& check : report.checks) {
    checks.push_back({status_marker(check.status), check.name, shorten(check.observed, 60),
                      check.remedy.empty() ? "" : "fix: " + check.remedy});
  }
  if (!checks.empty()) std::cout << "  checks:\n" << render_table(checks, "    ");
  std::cout << enforces_line(capability_names(report.capabilities)) << '\n';
}

void print_text(const std::vector<BackendListing>& listings,
                const std::vector<RejectedPlugin>& rejected, bool probe) {
  if (listings.empty()) std::cout << "No backends loaded.\n";
  if (probe) {
    for (const BackendListing& listing : listings) print_probed(listing);
  } else if (!listings.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"BACKEND", "VERSION", "ABI", "PATH", "DESCRIPTION"}};
    for (const BackendListing& listing : listings)
      rows.push_back(
          {listing.name, listing.version, listing.abi, listing.path, listing.description});
    std::cout << render_table(rows);
  }
  if (rejected.empty()) return;
  std::cout << (probe || listings.empty() ? "" : "\n") << "Rejected plugins:\n";
  std::vector<std::vector<std::string>> rows = {{"STAGE", "PATH", "REASON"}};
  for (const RejectedPlugin& plugin : rejected)
    rows.push_back({std::string(to_string(plugin.stage)), plugin.path, plugin.message});
  std::cout << render_table(rows, "  ");
}

// `--verify NAME`: 0 when every capability the backend declares held under attack, 1 when one
// did not (or the backend is not available here), 2 when no backend of that name is loaded.
int run_verify(const BackendsOptions& options, const GlobalOptions& globals) {
  GlobalOptions only = globals;
  only.backends = {options.verify};
  Result<PluginRegistry> registry = load_registry(only, RegistryScope::kWanted);
  if (!registry.ok()) return fail(registry.failure());
  const LoadedPlugin* plugin = registry->find(options.verify);
  if (plugin == nullptr) {
    fail("no backend named '" + printable(options.verify) + "' is loaded",
         "`sbx backends` lists the loaded ones and the rejected plugins with why");
    return kExitInvalidInput;
  }
  const ProbeReport probe = probe_and_keep(*plugin);
  Result<VerifyReport> report = verify_backend(*plugin, probe, globals);
  if (!report.ok()) return fail(report.failure());
  if (options.json) {
    std::cout << verify_report_to_json(*report) << '\n';
  } else {
    std::cout << verify_report_text(*report);
  }
  return report->verified ? 0 : 1;
}

// The plugin directories the settings add (and their locks on --plugin-dir), read for the
// current directory as a run there would: the listing shows what a run loads.
Result<GlobalOptions> listed_backends(const GlobalOptions& globals) {
  Result<std::string> cwd = effective_cwd(PolicyOptions{});
  if (!cwd.ok()) return cwd.failure();
  Result<settings::Settings> loaded = load_cli_settings(*cwd);
  if (!loaded.ok()) return loaded.failure();
  Result<settings::BackendRequest> request = backend_request(globals);
  if (!request.ok()) return request.failure();
  Result<settings::BackendSelection> selection = settings::decide_backends(*loaded, *request);
  if (!selection.ok())
    return Error{selection.error() +
                     "; ask for less, or ask the administrator (`sbx config show` shows the locks)",
                 selection.kind()};
  return with_backends(globals, *selection);
}

int run_backends(const BackendsOptions& options, const GlobalOptions& globals) {
  if (!options.verify.empty()) return run_verify(options, globals);
  Result<GlobalOptions> chosen = listed_backends(globals);
  if (!chosen.ok()) return fail(chosen.failure());
  Result<PluginRegistry> registry = load_registry(*chosen, RegistryScope::kAll);
  if (!registry.ok()) return fail(registry.failure());
  const std::vector<BackendListing> listings = list_backends(*registry, options.probe);
  // The run cgroup is core's, the same for every backend: reported next to their probes.
  const std::optional<CgroupSupport> cgroups =
      options.probe ? std::optional<CgroupSupport>(probe_cgroups()) : std::nullopt;
  // How the plugins were loaded (through the checked descriptor, or by path where /proc/self/fd
  // is unusable): part of what the probe reports about this host.
  const std::optional<PluginLoading> loading =
      options.probe ? std::optional<PluginLoading>(registry->loading()) : std::nullopt;
  // What confines sbx itself (a container runtime's seccomp profile and capabilities), for
  // every backend alike: where bwrap is refused, this says by what (issue #38).
  const std::optional<CallerConfinement> caller =
      options.probe ? std::optional<CallerConfinement>(probe_caller()) : std::nullopt;
  if (options.json) {
    std::cout << backends_to_json(listings, registry->rejected(), JsonStyle::kPretty, cgroups,
                                  loading, caller)
              << '\n';
  } else {
    print_text(listings, registry->rejected(), options.probe);
    if (cgroups)
      std::cout << "resource limits (every backend): "
                << (cgroups->available ? "a cgroup per run: " : "no cgroup per run: ")
                << printable(cgroups->reason) << '\n';
    if (loading)
      std::cout << "plugin loading: " << to_string(loading->mode) << " - "
                << printable(loading->reason) << '\n';
    if (options.probe)
      std::cout << "plugin ABI: " << host_plugin_abi() << " (this sbx loads plugins built for "
                << SBX_ABI_MAJOR << ".0 to " << host_plugin_abi() << ")\n";
    if (caller)
      std::cout << "container (every backend): " << printable(caller_text(*caller)) << '\n';
  }
  return 0;
}

}  // namespace

Command register_backends(CLI::App& app, const GlobalOptions& globals) {
  auto options = std::make_shared<BackendsOptions>();
  CLI::App* sub = app.add_subcommand(
      "backends",
      "List the loaded backend plugins and the rejected ones; --probe checks what "
      "each can enforce on this host");
  CLI::Option* probe =
      sub->add_flag("--probe", options->probe,
                    "Probe each backend: availability, checks with remedies, capabilities");
  sub->add_flag("--json", options->json,
                "Print JSON: {\"backends\":[...],\"rejected\":[...]} (see core/cli/README.md)");
  sub->add_option("--verify", options->verify,
                  "Attack every capability backend NAME declares through real sbx exec runs and "
                  "report each: verified, failed (with the evidence) or not declared; exit 1 "
                  "when one fails (sdk/CAPABILITIES.md)")
      ->type_name("NAME")
      ->excludes(probe);
  sub->footer(
      "Examples:\n  sbx backends\n  sbx backends --probe\n  sbx backends --probe --json\n"
      "  sbx backends --verify bwrap\n  sbx --plugin-dir /opt/acme/backends backends --verify "
      "acme");
  return {sub, [options, &globals] { return run_backends(*options, globals); }};
}

}  // namespace sbx::cli
