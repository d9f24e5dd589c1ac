// `sbx policy schema` (prints the embedded JSON Schema of a policy) and the hidden
// `sbx __describe-cli --json`: every subcommand and option as CLI11 holds them, the one source
// that cmake/scripts/gen_cli_docs.py turns into the man pages and the bash/zsh/fish completions
// at build time (so they cannot drift from the parser).
#include <boost/json.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "extras.hpp"

namespace sbx::cli {
namespace {

namespace json = boost::json;

// Generated from core/schema/policy.schema.json by cmake/scripts/embed_text.cmake.
constexpr unsigned char kSchemaBytes[] = {
#include "policy_schema.inc"
};

// "MODE:{auto,require,forbid}" -> {"auto","require","forbid"} (CLI11's IsMember description).
json::array describe_choices(const std::string& type_name) {
  json::array choices;
  std::size_t open = type_name.find(":{");
  std::size_t close = type_name.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return choices;
  std::string list = type_name.substr(open + 2, close - open - 2);
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) choices.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return choices;
}

json::object describe_option(const CLI::Option& option) {
  json::object out;
  json::array names;
  for (const std::string& name : option.get_lnames()) names.emplace_back("--" + name);
  for (const std::string& name : option.get_snames()) names.emplace_back("-" + name);
  out["names"] = std::move(names);
  out["positional"] = option.get_positional() && !option.nonpositional();
  out["name"] = option.get_name(true, false);
  out["description"] = option.get_description();
  std::string type_name = option.get_type_name();
  out["choices"] = describe_choices(type_name);
  out["value"] = type_name.substr(0, type_name.find(':'));
  out["takes_value"] = option.get_expected_max() > 0;
  out["repeatable"] = option.get_items_expected_max() > 1 ||
                      option.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
  out["default"] = option.get_default_str();
  out["required"] = option.get_required();
  out["group"] = option.get_group();
  return out;
}

// Hidden subcommands and options (empty group) are left out: they are not for users.
json::object describe_app(const CLI::App& app) {
  json::object out;
  out["name"] = app.get_name();
  out["description"] = app.get_description();
  out["footer"] = app.get_footer();
  json::array options;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;
    options.emplace_back(describe_option(*option));
  }
  out["options"] = std::move(options);
  json::array subcommands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return a != nullptr; })) {
    if (sub->get_group().empty()) continue;
    subcommands.emplace_back(describe_app(*sub));
  }
  out["subcommands"] = std::move(subcommands);
  return out;
}

Command register_schema(CLI::App& policy) {
  CLI::App* schema = policy.add_subcommand(
      "schema",
      "Print the JSON Schema (draft 2020-12) of a policy file, for editors and validators; "
      "also installed as share/sbx/policy.schema.json. `policy check` stays the authority");
  schema->footer("Example:\n  sbx policy schema > policy.schema.json");
  return {schema, [] {
            std::cout << policy_schema_text();
            return 0;
          }};
}

Command register_describe(CLI::App& app) {
  CLI::App* describe = app.add_subcommand("__describe-cli", "");
  describe->group("");  // hidden: not in --help, the man pages or the completions
  auto as_json = std::make_shared<bool>(false);
  describe->add_flag("--json", *as_json, "");
  return {describe, [&app, as_json] {
            if (!*as_json) return fail("__describe-cli needs --json", "run it with --json");
            std::cout << json::serialize(describe_app(app)) << '\n';
            return 0;
          }};
}

}  // namespace

std::string_view policy_schema_text() {
  return {reinterpret_cast<const char*>(kSchemaBytes), sizeof kSchemaBytes};
}

std::vector<Command> register_extras(CLI::App& app) {
  std::vector<Command> commands;
  CLI::App* policy = app.get_subcommand("policy");
  commands.push_back(register_schema(*policy));
  commands.push_back(register_policy_import(*policy));
  commands.push_back(register_describe(app));
  return commands;
}

}  // namespace sbx::cli
