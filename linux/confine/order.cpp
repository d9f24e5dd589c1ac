// See order.hpp; the table itself is in README.md and docs/ARCHITECTURE.md.
#include "order.hpp"

namespace sbx::confine {
namespace {

// Appends rows to an Order: by(actor) names who performs the steps add() appends next.
class Rows {
 public:
  explicit Rows(Order& order) : order_(order) {}
  Rows& by(Actor actor) {
    actor_ = actor;
    return *this;
  }
  // Appends `step` when `present` (a conditional step of the shape).
  Rows& add(Step step, bool present = true) {
    if (present && order_.size < kMaxSteps) order_.steps[order_.size++] = {actor_, step};
    return *this;
  }

 private:
  Order& order_;
  Actor actor_ = Actor::kLauncher;
};

// A bwrap run's command is in one Landlock domain: the write layer, which also scopes, or
// without one the scope alone. Landlock denies reparenting in every layer that does not grant
// LANDLOCK_ACCESS_FS_REFER, which a scope-only layer cannot, so a scope beneath the write layer
// made every cross-directory rename and link EXDEV (linux/landlock/write_layer.hpp).
bool separate_scope(const Shape& s) { return s.landlock_scope && !s.write_layer; }

// sbx's child that execs bwrap, both routes (launch.cpp run_child). Its limits come before
// no_new_privs for the cgroup files; the notify filter before bwrap so that nothing bwrap
// starts connects unsupervised; the scope (direct launch without the write layer only: stage 2
// enters it itself, the waiter's layer scopes) last, so bwrap and everything it starts are
// inside.
void bwrap_launcher(const Shape& s, Rows& rows) {
  rows.by(Actor::kLauncher)
      .add(Step::kDescriptors)
      .add(Step::kLimits)
      .add(Step::kNoNewPrivs)
      .add(Step::kNotifyFilter)
      .add(Step::kLandlockScope, s.route == Route::kBwrapDirect && separate_scope(s))
      .add(Step::kExec);
}

// bwrap 0.8 (bubblewrap.c main()) sets no_new_privs first, makes the namespaces and mounts
// (closing each descriptor sbx gave it once used); the direct launch's last mount is the pause
// point, where sbx checks the sandbox; then drop_privs() (--cap-drop ALL) and, last before
// execvp, the --add-seccomp-fd programs. bwrap execs the waiter, which reports the command's
// real wait status (bwrap folds a signal into 128+N). The write layer can only come after every
// mount, so in the direct launch it is the waiter's, after bwrap's filter (which allows the
// Landlock calls, fork and execve), and before it forks: the waiter keeps nothing the command
// lacks. The command's child marks the waiter's descriptors close-on-exec.
void bwrap_direct(const Shape& s, Rows& rows) {
  bwrap_launcher(s, rows);
  rows.by(Actor::kBwrap).add(Step::kNoNewPrivs).add(Step::kMounts);
  rows.by(Actor::kPauseCheck).add(Step::kMountCheck).add(Step::kNetworkCheck, s.private_network);
  rows.by(Actor::kBwrap).add(Step::kCapabilities).add(Step::kSeccomp).add(Step::kExec);
  rows.by(Actor::kWaiter)
      .add(Step::kNoNewPrivs)
      .add(Step::kWriteLayer, s.write_layer)
      .add(Step::kDescriptors)
      .add(Step::kExec);
}

// Stage 2 as PID 1 (stage2_main.cpp main()): bwrap gives it no filter (--as-pid-1, no
// --add-seccomp-fd). It checks bwrap's mounts before anything else, mounts the copy-on-write
// caches with the capabilities bwrap left it for them (which it drops in its capability step),
// forks the relay before the Landlock domains and the filter (the relay needs the proxy's unix
// socket), and marks the descriptors close-on-exec in the command's child, after the filter.
void bwrap_stage2(const Shape& s, Rows& rows) {
  bwrap_launcher(s, rows);
  rows.by(Actor::kBwrap)
      .add(Step::kNoNewPrivs)
      .add(Step::kMounts)
      .add(Step::kCapabilities)
      .add(Step::kExec);
  rows.by(Actor::kStage2)
      .add(Step::kMountCheck, s.mount_check)
      .add(Step::kCacheOverlays, s.cache_overlays)
      .add(Step::kNoNewPrivs)
      .add(Step::kCapabilities)
      .add(Step::kNetworkCheck, s.private_network)
      .add(Step::kProxyRelay, s.proxy_relay)
      .add(Step::kLandlockScope, separate_scope(s))
      .add(Step::kWriteLayer, s.write_layer)
      .add(Step::kSeccomp)
      .add(Step::kDescriptors)
      .add(Step::kExec);
}

// The command's child of the Landlock launcher (landlock_launch.cpp command_child). No user
// namespace took the capabilities, so it drops them itself. The metadata guard's notify filter
// comes before the main filter, which then need not allow anything for it; with no guard the
// pid scope program is part of the seccomp step.
void landlock(const Shape& s, Rows& rows) {
  rows.by(Actor::kLauncher)
      .add(Step::kLimits)
      .add(Step::kNoNewPrivs)
      .add(Step::kCapabilities)
      .add(Step::kNotifyFilter)
      .add(Step::kLandlockRuleset, s.landlock_ruleset)
      .add(Step::kSeccomp)
      .add(Step::kDescriptors)
      .add(Step::kExec);
}

}  // namespace

Order confinement_order(const Shape& shape) noexcept {
  Order order;
  Rows rows(order);
  switch (shape.route) {
    case Route::kBwrapDirect:
      // Network mode proxy never takes the direct launch (its relay runs in stage 2): no order,
      // so whatever follows one fails its first step.
      if (!shape.proxy_relay) bwrap_direct(shape, rows);
      break;
    case Route::kBwrapStage2:
      bwrap_stage2(shape, rows);
      break;
    case Route::kLandlock:
      landlock(shape, rows);
      break;
  }
  return order;
}

Shape shape_of(Route route, Network network) noexcept {
  Shape s;
  s.route = route;
  s.private_network = route != Route::kLandlock && network != Network::kEnabled;
  s.proxy_relay = route != Route::kLandlock && network == Network::kProxy;
  s.landlock_scope = route != Route::kLandlock;
  s.write_layer = route != Route::kLandlock;
  s.cache_overlays = route == Route::kBwrapStage2;
  return s;
}

int seccomp_filters_of(Step step) noexcept {
  if (step == Step::kNotifyFilter) return 1;
  if (step == Step::kSeccomp) return 2;
  return 0;
}

const char* actor_name(Actor actor) noexcept {
  switch (actor) {
    case Actor::kLauncher:
      return "launcher";
    case Actor::kBwrap:
      return "bwrap";
    case Actor::kPauseCheck:
      return "pause check";
    case Actor::kStage2:
      return "stage 2";
    case Actor::kWaiter:
      return "waiter";
  }
  return "unknown actor";
}

const char* step_name(Step step) noexcept {
  switch (step) {
    case Step::kDescriptors:
      return "descriptors";
    case Step::kLimits:
      return "limits";
    case Step::kNoNewPrivs:
      return "no_new_privs";
    case Step::kCapabilities:
      return "capabilities";
    case Step::kNotifyFilter:
      return "notify filter";
    case Step::kMounts:
      return "mounts";
    case Step::kMountCheck:
      return "mount check";
    case Step::kCacheOverlays:
      return "cache overlays";
    case Step::kNetworkCheck:
      return "network check";
    case Step::kProxyRelay:
      return "proxy relay";
    case Step::kLandlockScope:
      return "Landlock scope";
    case Step::kLandlockRuleset:
      return "Landlock ruleset";
    case Step::kWriteLayer:
      return "write layer";
    case Step::kSeccomp:
      return "seccomp";
    case Step::kExec:
      return "exec";
  }
  return "unknown step";
}

}  // namespace sbx::confine
