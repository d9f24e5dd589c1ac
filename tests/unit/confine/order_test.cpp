// The confinement order's table (linux/confine/order.hpp) for every shape: the rules the order
// itself must keep, whoever performs the steps, and docs/ARCHITECTURE.md showing it as it is.
// What actually runs is compared with it in tests/integration/confine/.
#include "order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "steps.hpp"

namespace {

namespace confine = sbx::confine;
using confine::Actor;
using confine::Route;
using confine::Step;

// Every shape of every route: each conditional step on and off.
std::vector<confine::Shape> every_shape() {
  std::vector<confine::Shape> shapes;
  for (Route route : {Route::kBwrapDirect, Route::kBwrapStage2, Route::kLandlock}) {
    for (unsigned bits = 0; bits < 128; ++bits) {
      confine::Shape s;
      s.route = route;
      s.private_network = (bits & 1u) != 0;
      s.proxy_relay = (bits & 2u) != 0;
      s.landlock_scope = (bits & 4u) != 0;
      s.write_layer = (bits & 8u) != 0;
      s.mount_check = (bits & 16u) != 0;
      s.landlock_ruleset = (bits & 32u) != 0;
      s.cache_overlays = (bits & 64u) != 0;
      shapes.push_back(s);
    }
  }
  return shapes;
}

std::string render(const confine::Order& order);

// The index of the first row with `step`, or order.size when there is none.
std::size_t first(const confine::Order& order, Step step) {
  const auto* at = std::find_if(order.begin(), order.end(),
                                [step](const confine::StepAt& row) { return row.step == step; });
  return static_cast<std::size_t>(at - order.begin());
}

bool restricts(Step step) {
  return step == Step::kNotifyFilter || step == Step::kLandlockScope ||
         step == Step::kLandlockRuleset || step == Step::kWriteLayer || step == Step::kSeccomp;
}

TEST(ConfinementOrderTable, EveryShapeKeepsTheRules) {
  for (const confine::Shape& shape : every_shape()) {
    const confine::Order order = confine::confinement_order(shape);
    if (shape.route == Route::kBwrapDirect && shape.proxy_relay) {
      EXPECT_EQ(order.size, 0u) << "network mode proxy never takes the direct launch";
      continue;
    }
    const std::string text = render(order);
    ASSERT_GT(order.size, 0u);
    ASSERT_LT(order.size, confine::kMaxSteps) << text;
    EXPECT_EQ(order.steps[order.size - 1].step, Step::kExec) << text;
    // no_new_privs before every Landlock or seccomp step (landlock_restrict_self(2), seccomp(2)),
    // the run's limits before it (the cgroup's files).
    const std::size_t nnp = first(order, Step::kNoNewPrivs);
    for (std::size_t i = 0; i < order.size; ++i) {
      if (restricts(order.steps[i].step)) {
        EXPECT_LT(nnp, i) << text;
      }
    }
    EXPECT_LT(first(order, Step::kLimits), nnp) << text;
    // Capabilities, seccomp and descriptors are never left out.
    for (Step step : {Step::kCapabilities, Step::kSeccomp, Step::kDescriptors})
      EXPECT_LT(first(order, step), order.size) << confine::step_name(step) << "\n" << text;
    // A filesystem-handling Landlock domain only after every mount (hook_sb_mount()).
    if (shape.route != Route::kLandlock && shape.write_layer) {
      EXPECT_LT(first(order, Step::kMounts), first(order, Step::kWriteLayer)) << text;
    }
    // One Landlock domain per bwrap command: the write layer scopes, and a scope-only domain
    // beneath it would make every cross-directory rename and link EXDEV (write_layer.hpp).
    // Without the layer the scope is a step of its own wherever the kernel has it.
    if (shape.route != Route::kLandlock && shape.write_layer) {
      EXPECT_EQ(first(order, Step::kLandlockScope), order.size) << text;
    }
    if (shape.route != Route::kLandlock && !shape.write_layer && shape.landlock_scope) {
      EXPECT_LT(first(order, Step::kLandlockScope), order.size) << text;
    }
    // The direct launch's command is always the waiter's child: bwrap folds a signal into 128+N,
    // only the waiter can tell it (order.cpp bwrap_direct). The waiter's write layer comes before
    // its fork, so the waiter holds no write access the command lacks.
    if (shape.route == Route::kBwrapDirect) {
      ASSERT_GE(order.size, 2u) << text;
      EXPECT_EQ(order.steps[order.size - 1], (confine::StepAt{Actor::kWaiter, Step::kExec}))
          << text;
      EXPECT_EQ(order.steps[order.size - 2], (confine::StepAt{Actor::kWaiter, Step::kDescriptors}))
          << text;
    }
    // The relay is forked before stage 2 restricts itself: it needs the proxy's socket.
    if (shape.route == Route::kBwrapStage2 && shape.proxy_relay) {
      for (Step step : {Step::kLandlockScope, Step::kWriteLayer, Step::kSeccomp})
        EXPECT_LT(first(order, Step::kProxyRelay), first(order, step)) << text;
    }
    // The copy-on-write caches: stage 2 mounts them after checking bwrap's mounts and before
    // anything else, and drops the capabilities they needed in its capability step, before the
    // relay is forked and anything restricts the command.
    if (shape.route == Route::kBwrapStage2 && shape.cache_overlays) {
      const std::size_t overlays = first(order, Step::kCacheOverlays);
      ASSERT_LT(overlays, order.size) << text;
      EXPECT_EQ(order.steps[overlays].actor, Actor::kStage2) << text;
      if (shape.mount_check) {
        EXPECT_LT(first(order, Step::kMountCheck), overlays) << text;
      }
      std::size_t stage2_caps = order.size;
      for (std::size_t i = 0; i < order.size; ++i)
        if (order.steps[i] == confine::StepAt{Actor::kStage2, Step::kCapabilities}) stage2_caps = i;
      EXPECT_LT(overlays, stage2_caps) << text;
      for (Step step : {Step::kProxyRelay, Step::kLandlockScope, Step::kWriteLayer, Step::kSeccomp,
                        Step::kExec}) {
        const std::size_t at = first(order, step);
        if (at < order.size && order.steps[at].actor == Actor::kStage2) {
          EXPECT_LT(stage2_caps, at) << confine::step_name(step) << "\n" << text;
        }
      }
    }
    if (!shape.cache_overlays || shape.route != Route::kBwrapStage2) {
      EXPECT_EQ(first(order, Step::kCacheOverlays), order.size) << text;
    }
    // Every performer that starts a program ends with its exec; the pause check starts none.
    for (Actor actor : {Actor::kLauncher, Actor::kBwrap, Actor::kStage2, Actor::kWaiter}) {
      const confine::StepAt* last = nullptr;
      for (const confine::StepAt& row : order)
        if (row.actor == actor) last = &row;
      if (last != nullptr) {
        EXPECT_EQ(last->step, Step::kExec) << confine::actor_name(actor) << "\n" << text;
      }
    }
  }
}

// A performer's steps checked against its own rows: in order they pass, out of order (a step
// skipped, one twice, one of another performer) the caller is told to fail closed.
TEST(ConfinementSteps, AStepOutOfOrderIsRefusedInACheckedBuild) {
  if (!confine::kChecked)
    GTEST_SKIP() << "built without SBX_CONFINEMENT_CHECKS: done() checks nothing";
  const confine::Order order = confine::confinement_order(
      confine::shape_of(Route::kLandlock, confine::Network::kRestricted));
  confine::ConfinementSteps in_order(order, Actor::kLauncher);
  for (const confine::StepAt& row : order) EXPECT_TRUE(in_order.done(row.step));
  EXPECT_FALSE(in_order.done(Step::kExec)) << "no step after exec";
  confine::ConfinementSteps skipped(order, Actor::kLauncher);
  EXPECT_TRUE(skipped.done(Step::kLimits));
  EXPECT_FALSE(skipped.done(Step::kCapabilities)) << "no_new_privs comes first";
  confine::ConfinementSteps other(order, Actor::kStage2);
  EXPECT_FALSE(other.done(Step::kNoNewPrivs)) << "stage 2 has no rows in Landlock mode";
}

// "performer: step, step → performer: step": consecutive rows of one performer grouped.
std::string render(const confine::Order& order) {
  std::string text;
  const confine::StepAt* previous = nullptr;
  for (const confine::StepAt& row : order) {
    if (previous == nullptr || previous->actor != row.actor) {
      if (previous != nullptr) text += " → ";
      text += std::string(confine::actor_name(row.actor)) + ": ";
    } else {
      text += ", ";
    }
    text += confine::step_name(row.step);
    previous = &row;
  }
  return text;
}

// docs/ARCHITECTURE.md's table is the order with every conditional step present, those in
// brackets; bwrap's routes also without the write layer, where the scope is a step of its own.
TEST(ConfinementOrderTable, ArchitectureShowsTheOrder) {
  std::string doc = sbx::test::read_file(std::string(SBX_SOURCE_DIR) + "/docs/ARCHITECTURE.md");
  doc.erase(std::remove_if(doc.begin(), doc.end(), [](char c) { return c == '[' || c == ']'; }),
            doc.end());
  confine::Shape direct = confine::shape_of(Route::kBwrapDirect, confine::Network::kRestricted);
  confine::Shape stage2 = confine::shape_of(Route::kBwrapStage2, confine::Network::kProxy);
  confine::Shape landlock = confine::shape_of(Route::kLandlock, confine::Network::kProxy);
  confine::Shape direct_unlayered = direct;
  direct_unlayered.write_layer = false;
  confine::Shape stage2_unlayered = stage2;
  stage2_unlayered.write_layer = false;
  for (const confine::Shape& shape :
       {direct, direct_unlayered, stage2, stage2_unlayered, landlock}) {
    const std::string row = render(confine::confinement_order(shape));
    EXPECT_NE(doc.find("| " + row + " |"), std::string::npos) << "not in the table: " << row;
  }
}

}  // namespace
