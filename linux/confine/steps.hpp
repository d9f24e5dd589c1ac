// ConfinementSteps: how a launch path follows the order of order.hpp. The code that performs a
// step calls done(step) right after it (kExec: right before execve); done() is async-signal-safe
// (system calls on the caller's stack only), so vfork and CLONE_VM children use it too.
//
// Checked builds (SBX_CONFINEMENT_CHECKS: on whenever the tests are built, so in every build
// the suites run; off in the release preset, where done() is `return true` and nothing below
// exists): done() checks that `step` is this actor's next row of the order and returns false,
// with a message on stderr and errno EPROTO, when it is not. The caller then fails closed like
// for any failed step: the command never runs out of order.
//
// The trace (checked builds only; tests/integration/confine/ reads it): when sbx's environment
// names a descriptor in SBX_CONFINE_TRACE_FD, every performer writes one TraceRecord per step
// to it, sbx hands it on to stage 2 and the direct launch's waiter (--trace-fd), and each makes
// its copy close-on-exec, so the command never holds it. Why it is safe to have in a test
// build: it only writes records nothing in the run reads, never decides a step; the variable is
// read from sbx's own environment, so a sandboxed command can enable it only for an sbx of its
// own, tracing that run's steps; and a release build has none of it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "order.hpp"

#ifndef SBX_CONFINEMENT_CHECKS
#define SBX_CONFINEMENT_CHECKS 0
#endif

namespace sbx::confine {

inline constexpr bool kChecked = SBX_CONFINEMENT_CHECKS != 0;
inline constexpr const char* kTraceFdVariable = "SBX_CONFINE_TRACE_FD";
inline constexpr std::uint8_t kTraceMagic = 'C';
inline constexpr std::uint8_t kUnknown = 0xff;

// One step as its performer saw it. `observed` says whether the three fields after it describe
// the performing process (all but the pause check, which runs in sbx): what the steps before it
// in the order, bwrap's included, must have left.
struct TraceRecord {
  std::uint8_t magic = kTraceMagic;
  Actor actor = Actor::kLauncher;
  Step step = Step::kExec;
  std::uint8_t observed = 0;
  std::uint8_t no_new_privs = kUnknown;     // PR_GET_NO_NEW_PRIVS
  std::uint8_t capabilities = kUnknown;     // 1: an effective, permitted or inheritable one
  std::uint8_t seccomp_filters = kUnknown;  // /proc/self/status Seccomp_filters (Linux 5.9)
  std::uint8_t reserved = 0;
};
static_assert(sizeof(TraceRecord) == 8);

// sbx's side: the descriptor SBX_CONFINE_TRACE_FD names, made close-on-exec; -1 when unset, not
// an open descriptor above 2, or in an unchecked build.
int trace_fd_from_environment() noexcept;

// Stage 2's side (--trace-fd N): N made close-on-exec, or -1 when it is not open. -1 in an
// unchecked build.
int adopt_trace_fd(int fd) noexcept;

class ConfinementSteps {
 public:
  // `order` must outlive this object; `trace_fd` is -1 for no trace.
  ConfinementSteps(const Order& order, Actor actor, int trace_fd = -1) noexcept
      : order_(&order), actor_(actor), trace_fd_(trace_fd) {}

  // `step` was just performed (kExec: is about to be). False (checked builds) when the order
  // has another step next for this actor: fail closed then.
  [[nodiscard]] bool done(Step step) noexcept {
    if constexpr (!kChecked) {
      static_cast<void>(step);
      return true;
    } else {
      return checked_done(step);
    }
  }

 private:
  bool checked_done(Step step) noexcept;
  void trace(Step step) const noexcept;
  void complain(Step step, const StepAt* expected) const noexcept;

  const Order* order_;
  Actor actor_;
  int trace_fd_;
  std::size_t next_ = 0;  // the first row not yet matched
};

}  // namespace sbx::confine
