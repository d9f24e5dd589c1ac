// The bwrap plan: transform() hands exec() what it must manage on the host (the mount points
// bwrap will create, the existing protected paths the run relies on, the state directory) in
// the plan's typed host_paths, never in its notes; and exec() acts on exactly those fields.
#include "sbx/bwrap/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sbx/bwrap/translate.hpp"
#include "sbx_test/files.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sbx;
using namespace sbx::bwrap;

using sbx::test::read_file;
using sbx::test::TempDir;

bool has_machine_prefix(const std::vector<std::string>& notes) {
  return std::any_of(notes.begin(), notes.end(),
                     [](const std::string& note) { return note.rfind("sbx-bwrap:", 0) == 0; });
}

// A workspace-write request on /w with one missing protected name (/w/.codex, which bwrap has
// to create as a mount point) and one existing one (/w/.git).
TransformRequest workspace_request() {
  TransformRequest request;
  request.argv = {"/bin/true"};
  request.cwd = "/w";
  request.policy.filesystem_kind = FilesystemKind::kRestricted;
  request.policy.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}};
  request.policy.protected_paths = {{"/w/.codex", "/w", false, false},
                                    {"/w/.git", "/w", true, true}};
  return request;
}

HostFacts workspace_facts(const std::string& state_dir) {
  HostFacts facts;
  facts.bwrap_path = "/usr/bin/bwrap";
  facts.stage2_path = "/usr/libexec/sbx/sbx-stage2";
  facts.state_dir = state_dir;
  facts.paths = {{"/w", PathKind::kDirectory}, {"/w/.git", PathKind::kDirectory}};
  return facts;
}

// The typed plan travels to exec() in the plan's detail, unchanged, with the host it was made
// for; the printed argv is its stage2_form, and the plan's JSON member "launch" is what exec()
// will start (launch_form.hpp): here the stage-2 launch, as this plan's environment has no PWD.
TEST(BwrapPlan, TheTypedPlanTravelsInTheDetailAndThePlanShowsItsLaunch) {
  const TransformRequest request = workspace_request();
  Result<Translation> translation = translate(request, workspace_facts("/run/user/0/sbx"));
  ASSERT_TRUE(translation.ok()) << translation.error();
  const BwrapPlan typed = translation->plan;
  EXPECT_EQ(translation->argv, stage2_form(typed));
  PlanContext context;
  context.launch_host = {true, true};
  const ExecPlan plan = make_plan(request, std::move(*translation), context);
  const BwrapPlanDetail* detail = bwrap_detail_of(plan);
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->plan(), typed);
  EXPECT_EQ(detail->host(), (LaunchHost{true, true}));
  EXPECT_EQ(plan.argv, stage2_form(typed));
  Result<Launch> launch = planned_launch(typed, {true, true});
  ASSERT_TRUE(launch.ok()) << launch.error();
  EXPECT_EQ(launch->form, LaunchForm::kStage2);
  EXPECT_EQ(detail->report_json(), "{\"launch\":" + launch_json(*launch) + "}");
  // A plan without the detail is not this backend's.
  ExecPlan printed = plan;
  printed.detail = nullptr;
  EXPECT_EQ(bwrap_detail_of(printed), nullptr);
}

TEST(BwrapPlan, TransformFillsTheTypedHostPathsAndLeavesNotesToPeople) {
  const TransformRequest request = workspace_request();
  Result<Translation> translation = translate(request, workspace_facts("/run/user/0/sbx"));
  ASSERT_TRUE(translation.ok()) << translation.error();
  const std::vector<std::string> translated_notes = translation->notes;
  ASSERT_EQ(translation->synthetic_mount_points, std::vector<std::string>{"/w/.codex"});

  PlanContext context;
  context.state_dir = "/run/user/0/sbx";
  context.network_note = "a note for people";
  context.write_layer_note = "no write layer here";
  const ExecPlan plan = make_plan(request, std::move(*translation), context);

  EXPECT_EQ(plan.argv.front(), "/usr/bin/bwrap");
  EXPECT_EQ(plan.cwd, "/w");
  EXPECT_TRUE(plan.env.empty());
  EXPECT_EQ(plan.host_paths.created, std::vector<std::string>{"/w/.codex"});
  EXPECT_EQ(plan.host_paths.kept, std::vector<std::string>{"/w/.git"});
  EXPECT_EQ(plan.host_paths.state_dir, "/run/user/0/sbx");
  std::vector<std::string> expected_notes = translated_notes;
  expected_notes.push_back("a note for people");
  expected_notes.push_back("no write layer here");
  EXPECT_EQ(plan.notes, expected_notes);
  EXPECT_FALSE(has_machine_prefix(plan.notes));
  EXPECT_TRUE(needs_mount_registry(plan.host_paths));
}

// The policy's resolution found /w/.codex missing; by the time the translation looked, a run
// alongside had made its mount point there (a socket). The plan masks that socket and must
// hold it, or that run, ending first, removes it from under this sandbox's mask.
TEST(BwrapPlan, ASocketThatAppearedAfterTheResolutionIsHeld) {
  const TransformRequest request = workspace_request();
  HostFacts facts = workspace_facts("/run/user/0/sbx");
  facts.paths["/w/.codex"] = PathKind::kOther;
  Result<Translation> translation = translate(request, facts);
  ASSERT_TRUE(translation.ok()) << translation.error();
  EXPECT_TRUE(translation->synthetic_mount_points.empty());
  PlanContext context;
  context.state_dir = "/run/user/0/sbx";
  const ExecPlan plan = make_plan(request, std::move(*translation), context);
  const std::vector<std::string> mask = {"--ro-bind", "/dev/null", "/w/.codex"};
  EXPECT_NE(std::search(plan.argv.begin(), plan.argv.end(), mask.begin(), mask.end()),
            plan.argv.end())
      << "the socket is masked";
  EXPECT_TRUE(plan.host_paths.created.empty());
  EXPECT_EQ(plan.host_paths.kept, (std::vector<std::string>{"/w/.git", "/w/.codex"}));
}

// A missing name in a directory every user may write: the note says its mount point stays.
TEST(BwrapPlan, TheNoteSaysAMountPointInASharedDirectoryGoesWhenNoUsersRunRelies) {
  const TransformRequest request = workspace_request();
  HostFacts facts = workspace_facts("/run/user/0/sbx");
  facts.shared_directories = {"/w"};
  Result<Translation> translation = translate(request, facts);
  ASSERT_TRUE(translation.ok()) << translation.error();
  const bool says_when_it_goes =
      std::any_of(translation->notes.begin(), translation->notes.end(), [](const std::string& n) {
        return n.find("'/w/.codex' is masked") != std::string::npos &&
               n.find("removed once no run of any user relies on it: every user may write '/w'") !=
                   std::string::npos;
      });
  EXPECT_TRUE(says_when_it_goes);
  const ExecPlan own = make_plan(request, *translate(request, workspace_facts("")), {});
  EXPECT_TRUE(std::any_of(own.notes.begin(), own.notes.end(), [](const std::string& n) {
    return n.find("removed afterwards") != std::string::npos;
  }));
}

TEST(BwrapPlan, WithoutAStateDirectoryTheNoteSaysMountPointsStay) {
  const TransformRequest request = workspace_request();
  Result<Translation> translation = translate(request, workspace_facts(""));
  ASSERT_TRUE(translation.ok()) << translation.error();
  PlanContext context;
  context.no_state_dir_reason = "no home directory";
  const ExecPlan plan = make_plan(request, std::move(*translation), context);

  EXPECT_EQ(plan.host_paths.created, std::vector<std::string>{"/w/.codex"});
  EXPECT_TRUE(plan.host_paths.state_dir.empty());
  EXPECT_FALSE(needs_mount_registry(plan.host_paths));
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_EQ(plan.notes.back(),
            "no private state directory (no home directory): mount points made for missing "
            "protected names stay on the host");
  EXPECT_FALSE(has_machine_prefix(plan.notes));
}

TEST(BwrapPlan, NoCreatedPathMeansNoStateDirectoryNote) {
  TransformRequest request = workspace_request();
  request.policy.protected_paths.clear();
  Result<Translation> translation = translate(request, workspace_facts(""));
  ASSERT_TRUE(translation.ok()) << translation.error();
  PlanContext context;
  context.no_state_dir_reason = "no home directory";
  const ExecPlan plan = make_plan(request, std::move(*translation), context);
  EXPECT_EQ(plan.host_paths, PlanHostPaths{});
  EXPECT_TRUE(std::none_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n.find("no private state directory") != std::string::npos;
  }));
}

TEST(BwrapPlan, RegistryIsNeededOnlyWithAStateDirectoryAndSomethingToHold) {
  EXPECT_FALSE(needs_mount_registry({}));
  EXPECT_FALSE(needs_mount_registry({{"/w/.codex"}, {"/w/.git"}, ""}));
  EXPECT_FALSE(needs_mount_registry({{}, {}, "/state"}));
  EXPECT_TRUE(needs_mount_registry({{"/w/.codex"}, {}, "/state"}));
  EXPECT_TRUE(needs_mount_registry({{}, {"/w/.git"}, "/state"}));
}

// exec()'s use of the plan: the created path is made and recorded, and removed after the run.
TEST(BwrapPlan, ExecMakesAndRemovesTheCreatedPathsThePlanNames) {
  TempDir state, ws;
  const std::string codex = ws / ".codex";
  MountRegistry registry;
  ASSERT_TRUE(hold_host_paths(registry, {{codex}, {}, state.path()}).ok());
  // A socket inode: what /dev/null is bound over (no directory, whose removal would free a
  // data block; no regular file, which git on the host would list or take for a gitfile).
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(codex)))
      << "the registry makes each planned mount point";
  EXPECT_EQ(registry.release_and_cleanup(), std::vector<std::string>{codex});
  EXPECT_FALSE(fs::exists(codex));
}

// Without a state directory in the plan, exec() records nothing and removes nothing.
// Without a state directory nothing is recorded or removed, but the mount point is still sbx's
// socket inode: left to bwrap it would be an empty regular file, kept for good (an empty `.git`
// file makes git die in that directory). An existing name is left as it is.
TEST(BwrapPlan, ExecWithoutAStateDirectoryMakesTheSocketAndRemovesNothing) {
  TempDir ws;
  const std::string codex = ws / ".codex";
  const std::string agents = ws / ".agents";
  std::ofstream{agents} << "a person's file";
  MountRegistry registry;
  std::vector<std::string> unrecorded;
  ASSERT_TRUE(hold_host_paths(registry, {{codex, agents}, {}, ""}, &unrecorded).ok());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(codex)));
  EXPECT_EQ(unrecorded, std::vector<std::string>{codex}) << "only what it made";
  EXPECT_TRUE(registry.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(codex)));
  EXPECT_EQ(read_file(agents), "a person's file");
}

// H5: a run that makes mount points it cannot record warns once, with the state directory's
// error from the plan's note, the paths, and what to do; nothing when it made none.
TEST(BwrapPlan, UnrecordedMountPointsAreWarnedOfWithTheReason) {
  const TransformRequest request = workspace_request();
  Result<Translation> translation = translate(request, workspace_facts(""));
  ASSERT_TRUE(translation.ok()) << translation.error();
  PlanContext context;
  context.no_state_dir_reason = "'/h/.cache' is writable by group or others";
  const ExecPlan plan = make_plan(request, std::move(*translation), context);
  const std::string warning = unrecorded_mount_points_warning(plan, {"/w/.codex"});
  EXPECT_EQ(warning.rfind("no private state directory ('/h/.cache' is writable by group or "
                          "others): ",
                          0),
            0u)
      << warning;
  EXPECT_NE(warning.find("stay on the host: '/w/.codex'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("chmod 700 ~/.cache"), std::string::npos) << warning;
  EXPECT_EQ(unrecorded_mount_points_warning(plan, {}), "");
}

}  // namespace
