// `sbx policy schema` and `sbx schema NAME` (print the embedded JSON Schemas of a policy and of
// the reports sbx writes, core/schema/) and the hidden
// `sbx __describe-cli --json`: every subcommand and option as CLI11 holds them, the one source
// that cmake/scripts/gen_cli_docs.py turns into the man pages and the bash/zsh/fish completions
// at build time (so they cannot drift from the parser).
#include <boost/json.hpp>
#include <cstddef>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "extras.hpp"
#include "suggest.hpp"

namespace sbx::cli {
namespace {

namespace json = boost::json;

// Generated from core/schema/NAME.schema.json by cmake/scripts/embed_text.cmake.
constexpr unsigned char kSchemaBytes[] = {
#include "policy_schema.inc"
};
constexpr unsigned char kExecSchema[] = {
#include "exec_schema.inc"
};
constexpr unsigned char kExplainSchema[] = {
#include "explain_schema.inc"
};
constexpr unsigned char kBackendsSchema[] = {
#include "backends_schema.inc"
};
constexpr unsigned char kPlanSchema[] = {
#include "plan_schema.inc"
};
constexpr unsigned char kContextSchema[] = {
#include "context_schema.inc"
};
constexpr unsigned char kDenialSchema[] = {
#include "denial_schema.inc"
};
constexpr unsigned char kDecisionSchema[] = {
#include "decision_schema.inc"
};
constexpr unsigned char kCacheSchema[] = {
#include "cache_schema.inc"
};
constexpr unsigned char kVerifySchema[] = {
#include "verify_schema.inc"
};

template <std::size_t N>
std::string_view text_of(const unsigned char (&bytes)[N]) {
  return {reinterpret_cast<const char*>(bytes), N};
}

struct EmbeddedSchema {
  std::string_view name;  // `sbx schema NAME`, share/sbx/NAME.schema.json
  std::string_view what;  // for --help
  std::string_view text;
};

// Every schema sbx installs, in the order --help lists them.
std::vector<EmbeddedSchema> embedded_schemas() {
  return {
      {"policy", "a policy file (as `sbx policy schema`)", text_of(kSchemaBytes)},
      {"exec", "the report of `sbx exec --json` (last line of stderr) and of sbx_exec",
       text_of(kExecSchema)},
      {"explain", "`sbx explain --json` and sbx_explain", text_of(kExplainSchema)},
      {"backends", "`sbx backends [--probe] --json` and sbx_backends_json",
       text_of(kBackendsSchema)},
      {"plan", "`sbx exec --dry-run`, `sbx debug` and sbx_transform", text_of(kPlanSchema)},
      {"context", "`sbx context --json`, sbx_context and sbx_manager_context",
       text_of(kContextSchema)},
      {"denial", "sbx_classify_failure (an exec report's \"denial\")", text_of(kDenialSchema)},
      {"decision", "sbx_should_sandbox", text_of(kDecisionSchema)},
      {"cache", "`sbx cache list --json`", text_of(kCacheSchema)},
      {"verify", "`sbx backends --verify NAME --json`", text_of(kVerifySchema)},
  };
}

// "MODE:{auto,require,forbid}" -> ["auto","require","forbid"] (CLI11's IsMember description,
// and completion_values').
json::array describe_choices(const std::string& type_name) {
  json::array choices;
  for (const std::string& choice : described_choices(type_name)) choices.emplace_back(choice);
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

Command register_schema_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "schema",
      "Print the JSON Schema (draft 2020-12) of a policy file or of a JSON report sbx writes, "
      "for validators and code generators; also installed as share/sbx/NAME.schema.json");
  auto name = std::make_shared<std::string>();
  std::vector<std::string> names;
  std::string listing = "Schemas:\n";
  for (const EmbeddedSchema& schema : embedded_schemas()) {
    names.emplace_back(schema.name);
    listing += "  " + std::string(schema.name) + std::string(10 - schema.name.size(), ' ') +
               std::string(schema.what) + "\n";
  }
  sub->add_option("name", *name, "Which schema")
      ->required()
      ->check(CLI::IsMember(names))
      ->type_name("NAME");
  sub->footer(listing +
              "\nExamples:\n  sbx schema exec > exec.schema.json\n"
              "  sbx exec --json -- make 2>&1 >/dev/null | tail -n 1   (a document of `exec`)");
  return {sub, [name] {
            for (const EmbeddedSchema& schema : embedded_schemas()) {
              if (schema.name == *name) {
                std::cout << schema.text;
                return 0;
              }
            }
            return fail("unknown schema '" + *name + "'", "run 'sbx schema --help' for the names");
          }};
}

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
