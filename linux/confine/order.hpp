// The one confinement order: for each way sbx launches a command on Linux, the steps that
// confine it, in the order they run, and who performs each (linux/confine/README.md has the
// table). Pure: no OS access, no allocation, usable in a vfork child.
//
// Like nsjail's containProc() (one function holding every step of a jail in order), except that
// here the steps are spread over up to four processes: sbx's launcher child, bubblewrap,
// sbx-stage2 and its waiter (the direct launch's). So the order is data, and each of them follows
// its own rows of it through ConfinementSteps (steps.hpp), which checks them at run time in checked
// builds; bubblewrap's rows document what bubblewrap 0.8 does (bubblewrap.c main()), and the
// trace test (tests/integration/confine/) checks their effects from sbx's next step.
//
// Why this order, whoever performs it:
//  * the run's limits first: joining the run's cgroup writes to its files, which neither Landlock
//    nor the filters would allow later;
//  * no_new_privs before every Landlock or seccomp step: landlock_restrict_self(2) and an
//    unprivileged seccomp(2) filter require it, and set-user-ID programs gain nothing after it;
//  * capabilities dropped (or checked none held) before the command: Landlock and seccomp do not
//    stop what a capability allows (init_module, reboot, mount in a user namespace); the only
//    step that uses one (stage 2's cache overlays, mount(2)) comes right before they go;
//  * a filesystem-handling Landlock domain (the ruleset, the write layer) only after every mount:
//    Landlock refuses mount(2) to such a domain (security/landlock/fs.c hook_sb_mount());
//  * one Landlock domain per command: the write layer carries the scope, never a scope-only
//    domain beneath it, which would deny every cross-directory rename and link (EXDEV: Landlock
//    denies reparenting in each layer that does not grant LANDLOCK_ACCESS_FS_REFER);
//  * the seccomp filter last but for what the filter itself allows (the Landlock calls, execve):
//    the code after it is sbx's own, and it needs fewer exceptions the later it comes;
//  * every descriptor but 0-2 close-on-exec before the command's execve; exec last.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace sbx::confine {

// Who performs a step.
enum class Actor : std::uint8_t {
  kLauncher = 1,  // sbx's child: execs bwrap (plugins/bwrap/src/launch.cpp) or, in Landlock
                  // mode, the command (linux/landlock/landlock_launch.cpp, the command's child)
  kBwrap,         // bubblewrap itself (not sbx's code; bubblewrap.c main(), release 0.8)
  kPauseCheck,    // sbx at bwrap's pause point, the direct launch (plugins/bwrap/src/direct.cpp)
  kStage2,        // sbx-stage2 as PID 1 of the sandbox (stage2/stage2_main.cpp)
  kWaiter,        // sbx-stage2 --waiter, bwrap's command in the direct launch: enters the
                  // write layer, runs the command as its child and reports its wait status
};

// One confinement step.
enum class Step : std::uint8_t {
  kDescriptors = 1,  // every descriptor but the ones handed on close-on-exec
  kLimits,           // the run's cgroup and rlimits (RunContext::child_hook)
  kNoNewPrivs,       // PR_SET_NO_NEW_PRIVS
  kCapabilities,     // every capability dropped (bwrap --cap-drop ALL, the launcher) or, stage 2,
                     // checked that none is held
  kNotifyFilter,     // a seccomp user-notification filter whose listener goes to sbx: bwrap's
                     // unix-socket supervisor, Landlock mode's metadata guard
  kMounts,           // bwrap: the namespaces and every mount of the plan
  kMountCheck,       // the mounts bwrap made against the plan (plugins/bwrap/checks/)
  kCacheOverlays,    // stage 2 mounts the toolchain caches copy-on-write, holding the
                     // capabilities bwrap left it for that (stage2/cache_overlays.hpp)
  kNetworkCheck,     // the sandbox's network namespace is its own and holds only `lo`
  kProxyRelay,       // stage 2 forks the relay to the proxy (it needs the unix socket the
                     // command must not get, so it is forked before the filter)
  kLandlockScope,    // a Landlock domain scoping abstract unix sockets and signals (ABI 6+);
                     // bwrap without a write layer only (the layer scopes the same)
  kLandlockRuleset,  // Landlock mode's ruleset (linux/landlock/landlock_ruleset.hpp)
  kWriteLayer,       // bwrap's Landlock write layer, also the scope at ABI 6+
                     // (linux/landlock/write_layer.hpp; below ABI 2 it enters nothing)
  kSeccomp,          // the precompiled seccomp filter (linux/seccomp/seccomp_programs.hpp)
  kExec,             // execve of the next program (bwrap, sbx-stage2 or the command)
};

// The launch paths.
enum class Route : std::uint8_t {
  kBwrapDirect,  // sbx -> bwrap -> the waiter -> command (plugins/bwrap/README.md)
  kBwrapStage2,  // sbx -> bwrap -> sbx-stage2 (PID 1) -> command: network mode proxy, fallbacks
  kLandlock,     // sbx (launcher child) -> command (linux/landlock/README.md, "The launcher")
};

// What decides which conditional steps a launch has. Each performer fills in what it knows of
// its run; it checks only its own rows.
struct Shape {
  Route route = Route::kBwrapStage2;
  bool private_network = false;  // bwrap: a network namespace of the sandbox's own (restricted,
                                 // proxy), checked to hold only `lo`
  bool proxy_relay = false;      // bwrap stage 2: network mode proxy's relay
  bool landlock_scope = false;   // bwrap: Landlock ABI 6+ (the scope needs it; a step of its
                                 // own only without the write layer, which scopes then)
  bool write_layer = false;      // bwrap: the plan has one (direct launch: and ABI 2+, else the
                                 // waiter enters none)
  bool mount_check = true;       // bwrap stage 2: a mount list to check (a procfs inside)
  bool cache_overlays = false;   // bwrap stage 2: toolchain caches to mount copy-on-write
  bool landlock_ruleset = true;  // Landlock mode: the kernel restricts something for the plan
};

struct StepAt {
  Actor actor;
  Step step;
  friend constexpr bool operator==(const StepAt&, const StepAt&) = default;
};

inline constexpr std::size_t kMaxSteps = 32;

// The steps of one launch, in order.
struct Order {
  std::array<StepAt, kMaxSteps> steps{};
  std::size_t size = 0;
  const StepAt* begin() const { return steps.data(); }
  const StepAt* end() const { return steps.data() + size; }
};

// The order for `shape`: the table of linux/confine/README.md.
Order confinement_order(const Shape& shape) noexcept;

// The shape of a launch by its network mode as a policy names it ("restricted", "enabled",
// "proxy"), with every conditional step the kernel and plan allow: what the README's table shows
// and what the tests start from.
enum class Network : std::uint8_t { kRestricted, kEnabled, kProxy };
Shape shape_of(Route route, Network network) noexcept;

// How many seccomp filters a step installs (seccomp_programs.hpp: the precompiled filter is two
// programs, the syscall table and the argument rules); 0 for a step that is no filter.
int seccomp_filters_of(Step step) noexcept;

// Lower-case names for messages, the trace and the README ("no_new_privs", "stage 2", ...).
const char* actor_name(Actor actor) noexcept;
const char* step_name(Step step) noexcept;

}  // namespace sbx::confine
