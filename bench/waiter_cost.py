#!/usr/bin/env python3
"""What the bwrap direct launch's waiter costs (stage2/stage2_main.cpp, --waiter).

In the direct launch bwrap execs `sbx-stage2 --waiter [--write-layer --write-root ...]
--status-fd 9 -- COMMAND` instead of the command: one execve of the static stage 2, one vfork,
and with the write layer one Landlock ruleset more. Here without bwrap, rounds alternating
(order reversed every round): `/bin/true`; `/bin/true` through the waiter; through the waiter
with the write layer. Medians and 90th percentiles of wall time, and the CPU time (user +
system, getrusage of the children) per run: wall time on a loaded host is mostly the wait for a
CPU at each hand-off between the waiter and the command.

    python3 bench/waiter_cost.py PREFIX/libexec/sbx/sbx-stage2 [ROUNDS]
"""
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    stage2 = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 401
    with tempfile.TemporaryDirectory(prefix="sbx-waiter-") as root:
        cases = {
            "/bin/true": ["/bin/true"],
            "through the waiter": [stage2, "--waiter", "--", "/bin/true"],
            "waiter + write layer": [stage2, "--waiter", "--write-layer", "--write-root", root,
                                     "--", "/bin/true"],
        }
        times = {name: [] for name in cases}
        cpu = {name: 0.0 for name in cases}
        names = list(cases)
        for i in range(rounds):
            for name in names if i % 2 else names[::-1]:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                done = subprocess.run(cases[name], check=False)
                times[name].append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name] += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                if done.returncode != 0:
                    sys.exit(f"{name}: exit {done.returncode}")
    for name in names:
        ordered = sorted(times[name])
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        print(f"{name:24s} median {statistics.median(ordered) * 1e3:.3f} ms  "
              f"p90 {p90 * 1e3:.3f} ms  CPU {cpu[name] / rounds * 1e3:.3f} ms")
    base = statistics.median(times["/bin/true"])
    for name in names[1:]:
        extra = statistics.median(times[name]) - base
        extra_cpu = (cpu[name] - cpu["/bin/true"]) / rounds
        print(f"{name}: +{extra * 1e3:.3f} ms per run (median difference), "
              f"CPU +{extra_cpu * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
