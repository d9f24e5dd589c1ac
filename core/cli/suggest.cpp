// "Did you mean" for refused command lines (suggest.hpp): edit distance, the closest match, and
// a walk over the arguments with CLI11's definitions.
#include "suggest.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::cli {
namespace {

// The name completion_values gives its validator: the walk holds no value against it.
constexpr const char* kCompletionOnly = "sbx-completion-only";

std::string_view undashed(std::string_view text) {
  while (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return text;
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out += separator;
    out += word;
  }
  return out;
}

// Hidden subcommands and options (group "", like `__describe-cli`) are matched when typed
// exactly but never suggested.
bool hidden(const CLI::App* app) { return app->get_group().empty(); }

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

std::vector<std::string> visible_subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (CLI::App* sub : subcommands_of(app))
    if (!hidden(sub)) names.push_back(sub->get_name());
  return names;
}

CLI::App* subcommand_named(CLI::App& app, const std::string& word) {
  for (CLI::App* sub : subcommands_of(app))
    if (sub->check_name(word)) return sub;
  return nullptr;
}

std::vector<CLI::Option*> named_options(CLI::App& app) {
  return app.get_options([](const CLI::Option* option) { return option->nonpositional(); });
}

std::vector<CLI::Option*> positionals(CLI::App& app) {
  return app.get_options([](const CLI::Option* option) {
    return option->get_positional() && !option->nonpositional();
  });
}

CLI::Option* option_named(CLI::App& app, const std::string& name) {
  for (CLI::Option* option : named_options(app))
    if (option->check_name(name)) return option;
  return nullptr;
}

std::vector<std::string> visible_option_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : named_options(app)) {
    if (option->get_group().empty()) continue;
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// The values CLI11 holds the option's values against (IsMember), none for completion_values.
std::vector<std::string> checked_choices(CLI::Option& option) {
  try {
    option.get_validator(kCompletionOnly);
    return {};
  } catch (const CLI::OptionNotFound&) {
    return described_choices(option.get_type_name());
  }
}

std::vector<std::string> split_values(const std::string& value, char delimiter) {
  if (delimiter == '\0') return {value};
  std::vector<std::string> values;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = value.find(delimiter, start);
    values.push_back(value.substr(start, end - start));
    if (end == std::string::npos) return values;
    start = end + 1;
  }
}

// The option (or positional) as the message names it: "--preset", "NAME".
std::string option_label(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames().front();
  if (!option.get_snames().empty()) return "-" + option.get_snames().front();
  const std::string type = option.get_type_name();
  return type.substr(0, type.find(':'));
}

std::optional<Misspelling> unknown_value(CLI::Option& option, const std::string& value,
                                         CLI::App& app, const std::string& path) {
  const std::vector<std::string> choices = checked_choices(option);
  if (choices.empty()) return std::nullopt;
  for (const std::string& item : split_values(value, option.get_delimiter())) {
    if (std::find(choices.begin(), choices.end(), item) != choices.end()) continue;
    std::string message = "unknown value " + in_quotes(item) + " for " + option_label(option);
    if (std::optional<std::string> match = closest_match(item, choices))
      message += "; did you mean " + in_quotes(*match) + "?";
    else
      message += "; use one of " + joined(choices, ", ");
    return Misspelling{message, &app, path};
  }
  return std::nullopt;
}

std::optional<Misspelling> unknown_option(CLI::App& app, const std::string& path,
                                          const std::string& name) {
  // A global option given after the verb: CLI11 takes options of the level they belong to.
  for (CLI::App* above = app.get_parent(); above != nullptr; above = above->get_parent()) {
    if (option_named(*above, name) != nullptr) {
      const std::string owner = path.substr(0, path.rfind(' '));
      return Misspelling{in_quotes(name) + " is an option of " + in_quotes(owner) + ", not of " +
                             in_quotes(path) + "; give it before " + in_quotes(app.get_name()),
                         &app, path};
    }
  }
  std::string message = "unknown option " + in_quotes(name) + " for " + in_quotes(path);
  if (std::optional<std::string> match = closest_match(name, visible_option_names(app)))
    message += "; did you mean " + in_quotes(*match) + "?";
  else
    message += "; run '" + path + " --help' for the options";
  return Misspelling{message, &app, path};
}

std::optional<Misspelling> unknown_command(CLI::App& app, const std::string& path,
                                           const std::string& word) {
  std::string message = "unknown command " + in_quotes(word);
  if (app.get_parent() != nullptr) message += " for " + in_quotes(path);
  if (std::optional<std::string> match = closest_match(word, visible_subcommand_names(app))) {
    message += "; did you mean " + in_quotes(*match) + "?";
    return Misspelling{message, subcommand_named(app, *match), path + " " + *match};
  }
  return Misspelling{message + "; run '" + path + " --help' for the list", &app, path};
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: i-2, i-1 and i (the transposition looks two back).
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<std::string>& candidates) {
  const std::string_view word = undashed(typed);
  if (word.size() >= 2) {
    std::optional<std::string> only;
    std::size_t prefixed = 0;
    for (const std::string& candidate : candidates) {
      const std::string_view name = undashed(candidate);
      if (name.size() > word.size() && name.substr(0, word.size()) == word) {
        ++prefixed;
        only = candidate;
      }
    }
    if (prefixed == 1) return only;
  }
  if (word.size() < 3) return std::nullopt;
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(word, undashed(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::vector<std::string> described_choices(const std::string& type_name) {
  std::vector<std::string> choices;
  const std::size_t open = type_name.find(":{");
  const std::size_t close = type_name.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return choices;
  for (std::string& value : split_values(type_name.substr(open + 2, close - open - 2), ','))
    if (!value.empty()) choices.push_back(std::move(value));
  return choices;
}

CLI::Validator completion_values(const std::vector<std::string>& values) {
  return CLI::Validator([](std::string&) { return std::string(); }, "{" + joined(values, ",") + "}",
                        kCompletionOnly);
}

std::optional<Misspelling> find_misspelling(CLI::App& root, const std::vector<std::string>& args) {
  CLI::App* app = &root;
  std::string path = root.get_name();
  std::size_t positional = 0;  // the next positional of `app` a word fills
  bool absorbing = false;      // a positional taking every word left (CMD [ARG...])
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // everything after it is the command's
    if (arg.size() > 1 && arg[0] == '-') {
      const std::size_t equals = arg.find('=');
      const std::string name = arg.substr(0, equals);
      CLI::Option* option = option_named(*app, name);
      if (option == nullptr) return unknown_option(*app, path, name);
      if (option->get_expected_max() <= 0) continue;  // a flag
      if (equals == std::string::npos && i + 1 >= args.size()) return std::nullopt;
      const std::string& value = equals == std::string::npos ? args[++i] : arg.substr(equals + 1);
      if (auto wrong = unknown_value(*option, value, *app, path)) return wrong;
      continue;
    }
    if (CLI::App* sub = subcommand_named(*app, arg); sub != nullptr && !absorbing) {
      app = sub;
      path += " " + sub->get_name();
      positional = 0;
      continue;
    }
    if (absorbing) continue;
    const std::vector<CLI::Option*> slots = positionals(*app);
    if (positional < slots.size()) {
      CLI::Option* slot = slots[positional++];
      if (auto wrong = unknown_value(*slot, arg, *app, path)) return wrong;
      absorbing = slot->get_items_expected_max() > 1;
      continue;
    }
    if (!visible_subcommand_names(*app).empty()) return unknown_command(*app, path, arg);
    return std::nullopt;  // an extra word: the parser's own message says so
  }
  return std::nullopt;
}

std::string usage_line(const CLI::App& app, const std::string& path) {
  std::string line = CLI::Formatter().make_usage(&app, path);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace sbx::cli
