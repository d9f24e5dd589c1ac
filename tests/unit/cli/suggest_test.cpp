// "Did you mean" for refused command lines (core/cli/suggest.cpp): the distance, the closest
// match and its threshold, and the walk over a command line shaped like sbx's (the installed
// sbx's messages: tests/cli/cli_test.py, class Typos).
#include "suggest.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace sbx::cli {
namespace {

TEST(CliSuggest, EditDistanceCountsTranspositionsAsOneEdit) {
  EXPECT_EQ(edit_distance("exec", "exec"), 0u);
  EXPECT_EQ(edit_distance("exce", "exec"), 1u);
  EXPECT_EQ(edit_distance("polcy", "policy"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(CliSuggest, ClosestMatchWithinAThirdOfTheLength) {
  const std::vector<std::string> verbs = {"backends", "explain", "exec",   "context",
                                          "debug",    "policy",  "config", "schema"};
  EXPECT_EQ(closest_match("exce", verbs), "exec");
  EXPECT_EQ(closest_match("polcy", verbs), "policy");
  EXPECT_EQ(closest_match("expalin", verbs), "explain");
  EXPECT_EQ(closest_match("back", verbs), "backends");  // the only one it begins
  EXPECT_EQ(closest_match("ex", verbs), std::nullopt);  // exec and explain: no guess
  EXPECT_EQ(closest_match("xyzzy", verbs), std::nullopt);
  EXPECT_EQ(closest_match("x", verbs), std::nullopt);
  EXPECT_EQ(closest_match("--polcy", {"--help", "--policy", "--preset"}), "--policy");
  EXPECT_EQ(closest_match("-x", {"-h", "--help"}), std::nullopt);  // too short to guess
  EXPECT_EQ(closest_match("workspace-wrte", {"read-only", "workspace-write"}), "workspace-write");
}

TEST(CliSuggest, ChoicesComeFromTheTypeName) {
  EXPECT_EQ(described_choices("MODE:{restricted,enabled,proxy}"),
            (std::vector<std::string>{"restricted", "enabled", "proxy"}));
  EXPECT_EQ(described_choices("FILE"), std::vector<std::string>{});
  CLI::App app{"t", "t"};
  std::string value;
  CLI::Option* option =
      app.add_option("--x", value)->check(completion_values({"a", "b"}))->type_name("NAME");
  EXPECT_EQ(described_choices(option->get_type_name()), (std::vector<std::string>{"a", "b"}));
}

// A command line shaped like sbx's: global options, verbs with policy options, a verb with
// subcommands, a positional with a fixed set and one with an open set.
class CliSuggestWalk : public ::testing::Test {
 protected:
  CliSuggestWalk() {
    app.add_option("--backends", backends)->delimiter(',')->check(completion_values({"bwrap"}));
    app.add_option("--log-level", text)->check(CLI::IsMember({"warn", "error"}));
    app.require_subcommand(1);
    for (const char* verb : {"exec", "explain"}) {
      CLI::App* sub = app.add_subcommand(verb, verb);
      sub->add_option("--policy", text)->type_name("FILE")->group("Policy");
      sub->add_option("--preset", text)
          ->check(CLI::IsMember({"read-only", "workspace-write"}))
          ->group("Policy");
      sub->add_option("--network", text)
          ->check(CLI::IsMember({"restricted", "enabled", "proxy"}))
          ->group("Policy");
      sub->add_flag("--dry-run", flag);
      sub->add_option("command", command);
    }
    CLI::App* policy = app.add_subcommand("policy", "policy");
    policy->require_subcommand(1);
    policy->add_subcommand("check", "check")->add_option("--policy", text);
    policy->add_subcommand("show", "show");
    CLI::App* debug = app.add_subcommand("debug", "debug");
    debug->add_option("backend", text)->required()->check(completion_values({"bwrap"}));
    debug->add_option("command", command);
    app.add_subcommand("__hidden", "")->group("");
  }

  std::optional<Misspelling> wrong(const std::vector<std::string>& args) {
    return find_misspelling(app, args);
  }

  CLI::App app{"sbx", "sbx"};
  std::vector<std::string> backends;
  std::vector<std::string> command;
  std::string text;
  bool flag = false;
};

TEST_F(CliSuggestWalk, TypoOfEachVerb) {
  for (const auto& [typed, meant] : std::vector<std::pair<std::string, std::string>>{
           {"exce", "exec"}, {"expain", "explain"}, {"polcy", "policy"}, {"debgu", "debug"}}) {
    const std::optional<Misspelling> found = wrong({typed, "--", "ls"});
    ASSERT_TRUE(found) << typed;
    EXPECT_EQ(found->message, "unknown command '" + typed + "'; did you mean '" + meant + "'?");
    EXPECT_EQ(found->usage_app->get_name(), meant);
    EXPECT_EQ(found->usage_path, "sbx " + meant);
  }
  const std::optional<Misspelling> sub = wrong({"policy", "chek"});
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->message, "unknown command 'chek' for 'sbx policy'; did you mean 'check'?");
  EXPECT_EQ(usage_line(*sub->usage_app, sub->usage_path), "Usage: sbx policy check [OPTIONS]");
}

TEST_F(CliSuggestWalk, TypoOfOptions) {
  const std::optional<Misspelling> exec = wrong({"exec", "--polcy", "x.json", "--", "ls"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->message, "unknown option '--polcy' for 'sbx exec'; did you mean '--policy'?");
  EXPECT_EQ(usage_line(*exec->usage_app, exec->usage_path),
            "Usage: sbx exec [OPTIONS] [command...]");
  const std::optional<Misspelling> explain = wrong({"explain", "--dryrun"});
  ASSERT_TRUE(explain);
  EXPECT_EQ(explain->message,
            "unknown option '--dryrun' for 'sbx explain'; did you mean '--dry-run'?");
  const std::optional<Misspelling> check = wrong({"policy", "check", "--polic=p.json"});
  ASSERT_TRUE(check);
  EXPECT_EQ(check->message,
            "unknown option '--polic' for 'sbx policy check'; did you mean '--policy'?");
  const std::optional<Misspelling> global = wrong({"--backend", "bwrap", "exec", "--", "ls"});
  ASSERT_TRUE(global);
  EXPECT_EQ(global->message, "unknown option '--backend' for 'sbx'; did you mean '--backends'?");
  const std::optional<Misspelling> late = wrong({"exec", "--backends", "bwrap", "--", "ls"});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->message,
            "'--backends' is an option of 'sbx', not of 'sbx exec'; give it before 'exec'");
}

TEST_F(CliSuggestWalk, TypoOfFixedValues) {
  const std::optional<Misspelling> preset = wrong({"exec", "--preset", "workspace-wrte"});
  ASSERT_TRUE(preset);
  EXPECT_EQ(preset->message,
            "unknown value 'workspace-wrte' for --preset; did you mean 'workspace-write'?");
  const std::optional<Misspelling> network = wrong({"explain", "--network=enbled"});
  ASSERT_TRUE(network);
  EXPECT_EQ(network->message, "unknown value 'enbled' for --network; did you mean 'enabled'?");
  const std::optional<Misspelling> level = wrong({"--log-level", "wrn", "exec"});
  ASSERT_TRUE(level);
  EXPECT_EQ(level->message, "unknown value 'wrn' for --log-level; did you mean 'warn'?");
}

TEST_F(CliSuggestWalk, NothingCloseGivesThePlainError) {
  const std::optional<Misspelling> verb = wrong({"xyzzy"});
  ASSERT_TRUE(verb);
  EXPECT_EQ(verb->message, "unknown command 'xyzzy'; run 'sbx --help' for the list");
  EXPECT_EQ(verb->usage_path, "sbx");
  const std::optional<Misspelling> option = wrong({"exec", "--zzz", "--", "ls"});
  ASSERT_TRUE(option);
  EXPECT_EQ(option->message,
            "unknown option '--zzz' for 'sbx exec'; run 'sbx exec --help' for the options");
  const std::optional<Misspelling> value = wrong({"exec", "--network", "zzz"});
  ASSERT_TRUE(value);
  EXPECT_EQ(value->message,
            "unknown value 'zzz' for --network; use one of restricted, enabled, proxy");
}

TEST_F(CliSuggestWalk, KnownWordsAndTheCommandAfterDashDashAreNotMisspellings) {
  // Everything after "--" is the command's, whatever it looks like.
  EXPECT_FALSE(wrong({"exec", "--preset", "read-only", "--", "exce", "--polcy", "x"}));
  // Without "--" an option after the command is sbx's, as the parser takes it.
  EXPECT_EQ(wrong({"exec", "--dry-run", "ls", "-l"})->message,
            "unknown option '-l' for 'sbx exec'; run 'sbx exec --help' for the options");
  EXPECT_FALSE(wrong({"--backends", "mine,bwrap", "exec", "--", "ls"}));  // an open set
  EXPECT_FALSE(wrong({"debug", "my-plugin", "--", "ls"}));                // an open set
  EXPECT_FALSE(wrong({"__hidden"}));
  EXPECT_FALSE(wrong({"policy", "check", "extra"}));  // an extra word: the parser's message
  // A hidden subcommand is never suggested.
  EXPECT_EQ(wrong({"__hiden"})->message,
            "unknown command '__hiden'; run 'sbx --help' for the list");
}

}  // namespace
}  // namespace sbx::cli
