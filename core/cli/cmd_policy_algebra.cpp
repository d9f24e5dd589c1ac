// `sbx policy widen A B` and `sbx policy approve REQUESTED GRANTED`: the permission algebra of
// sbx/core/permissions.hpp on policy files (either JSON form; "-" reads stdin), JSON out.
//   widen:   the widened policy in its full form.
//   approve: {"recorded":bool,"policy":object|null,"dropped":[string]}; recorded false means
//            "nothing recorded" (keep earlier grants; it is not a refusal) and still exits 0.
// Exit 2 when an input is not a valid policy (the error names the file and the JSON pointer),
// 125 for other failures (unreadable file).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/permissions.hpp"
#include "sbx/core/report_json.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct AlgebraOptions {
  std::string first;
  std::string second;
};

// The policy in `file` ("-" = stdin). On failure prints the error and sets `code`.
std::optional<Policy> read_policy(const std::string& file, int& code) {
  std::string text;
  if (file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      code = fail("cannot read policy file '" + printable(file) + "'",
                  "check the path and its permissions");
      return std::nullopt;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  Result<Policy> policy = parse_policy(text);
  if (!policy.ok()) {
    std::cerr << "sbx: " << printable(file) << ": " << policy.error() << '\n';
    code = kExitInvalidPolicy;
    return std::nullopt;
  }
  return std::move(*policy);
}

int run_widen(const AlgebraOptions& options) {
  int code = 0;
  std::optional<Policy> base = read_policy(options.first, code);
  if (!base) return code;
  std::optional<Policy> extra = read_policy(options.second, code);
  if (!extra) return code;
  Result<Policy> wide = widen(*base, *extra);
  if (!wide.ok()) return fail(wide.failure());
  std::cout << policy_to_json(*wide) << '\n';
  return 0;
}

int run_approve(const AlgebraOptions& options) {
  int code = 0;
  std::optional<Policy> requested = read_policy(options.first, code);
  if (!requested) return code;
  std::optional<Policy> granted = read_policy(options.second, code);
  if (!granted) return code;
  Result<Approval> approval = approve(*requested, *granted);
  if (!approval.ok()) return fail(approval.failure());
  std::cout << approval_to_json(*approval) << '\n';
  return 0;
}

}  // namespace

std::vector<Command> register_policy_algebra(CLI::App& policy) {
  auto widen_options = std::make_shared<AlgebraOptions>();
  CLI::App* widen_app = policy.add_subcommand(
      "widen",
      "Widen policy A by policy B (one command asks for more): every path gets the higher "
      "access, every deny of either side is kept, network enabled if either enables it; "
      "prints the full form");
  widen_app->add_option("A", widen_options->first, "The base policy file (- for stdin)")
      ->required();
  widen_app->add_option("B", widen_options->second, "The extra policy file")->required();
  widen_app->footer("Example:\n  sbx policy widen session.json request.json > session2.json");

  auto approve_options = std::make_shared<AlgebraOptions>();
  CLI::App* approve_app = policy.add_subcommand(
      "approve",
      "Intersect what a person GRANTED with what was REQUESTED: keeps only what lies inside "
      "both (denies of both kept); prints {\"recorded\",\"policy\",\"dropped\"}, where "
      "recorded false means nothing was recorded (earlier grants stay; not a refusal)");
  approve_app->add_option("REQUESTED", approve_options->first, "The requested policy file")
      ->required();
  approve_app->add_option("GRANTED", approve_options->second, "The granted policy file")
      ->required();
  approve_app->footer("Example:\n  sbx policy approve request.json granted.json");
  return {{widen_app, [widen_options] { return run_widen(*widen_options); }},
          {approve_app, [approve_options] { return run_approve(*approve_options); }}};
}

}  // namespace sbx::cli
