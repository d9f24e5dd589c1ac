// "Did you mean": a command line CLI11 refused, read again against CLI11's own definitions of
// the subcommands, options and fixed value sets, to name the first unknown word and the closest
// known one (core/cli/README.md, "Typos"). Only used after the parser refused the command
// line, so a correct one behaves exactly as without it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::cli {

// The optimal string alignment distance (Levenshtein with transpositions of adjacent
// characters, each edit counting 1): "exce" is 1 from "exec".
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `typed`, if one is close enough to be what was meant: the only
// candidate `typed` is a prefix of (at least 2 characters), else the first with the smallest
// edit distance when that is at most a third of typed's length (at least 1; no edit
// suggestions for fewer than 3 characters). Leading dashes are ignored on both sides.
std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<std::string>& candidates);

// The fixed values of an option as CLI11 describes them in its type name, from IsMember and
// completion_values ("MODE:{restricted,enabled,proxy}" -> restricted, enabled, proxy); empty
// for an option without one.
std::vector<std::string> described_choices(const std::string& type_name);

// A validator that accepts every value and only describes `values` for --help and the
// completions: for sets that are open at run time (backend names: plugins add their own).
// The command-line check below does not hold a value against it.
CLI::Validator completion_values(const std::vector<std::string>& values);

// What was wrong with a refused command line, in the house's words.
struct Misspelling {
  std::string message;        // "unknown command 'exce'; did you mean 'exec'?"
  const CLI::App* usage_app;  // whose usage line follows the message
  std::string usage_path;     // "sbx exec": the name the usage line gives it
};

// The first word of `args` (argv without the program name) that names no subcommand, option or
// value `root` knows, with the closest known one when there is one; nullopt when every word is
// known (the parser refused something else: its own message stands). Stops at "--".
std::optional<Misspelling> find_misspelling(CLI::App& root, const std::vector<std::string>& args);

// "Usage: sbx exec [OPTIONS] [command...]", as CLI11's --help writes it (no line break).
std::string usage_line(const CLI::App& app, const std::string& path);

}  // namespace sbx::cli
