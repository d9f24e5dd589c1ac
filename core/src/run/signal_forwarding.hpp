// The forwarding of signals sent to sbx on to the processes it waits for (spawn.cpp, where the
// rules are explained: only signals sent with kill()/sigqueue(), never the terminal's). Shared by
// core's spawner and the isolated exec of a third-party plugin (plugins/call_isolation.cpp),
// whose process is the one sbx waits for and which passes them on to the command itself. POSIX.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <csignal>

namespace sbx::signal_forwarding {

// The signals forwarded.
inline constexpr std::array<int, 8> kSignals = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                                SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

// Installs the forwarding handler for kSignals (counted: the first call installs it, the last
// remove() puts the previous dispositions back). Call with every signal blocked in this thread.
void install();
void remove();
// Registers `pid` as a process the handler forwards to; nullptr when every slot is taken (it
// then gets no forwarded signals). Clear the slot (store 0) before the process is reaped.
std::atomic<pid_t>* add(pid_t pid);

// In a child made with fork() in a process that may forward: forgets the parent's state (its
// children, its handler count, a lock another thread held) so that a spawn in this child
// forwards to this child's own processes only. Call before anything in the child spawns.
void reset_in_child() noexcept;

}  // namespace sbx::signal_forwarding
