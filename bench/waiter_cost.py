#!/usr/bin/env python3
"""What the bwrap write layer's trampoline costs (linux/landlock/write_layer.hpp).

In the direct launch bwrap execs `sbx-stage2 --write-layer-exec --write-root ... -- COMMAND`
instead of the command: one execve of the static stage 2 and one Landlock ruleset more. Here
without bwrap, rounds alternating (order reversed every round): `/bin/true`; stage 2 started and
exiting at once (its start alone); `/bin/true` through the trampoline. Medians and 90th
percentiles.

    python3 bench/write_layer_cost.py PREFIX/libexec/sbx/sbx-stage2 [ROUNDS]
"""
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    stage2 = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 401
    with tempfile.TemporaryDirectory(prefix="sbx-wl-") as root:
        cases = {
            "/bin/true": ["/bin/true"],
            "stage 2 start and exit": [stage2, "--write-layer-exec", "--not-an-option"],
            "through the trampoline": [stage2, "--write-layer-exec", "--write-root", root, "--",
                                       "/bin/true"],
        }
        times = {name: [] for name in cases}
        names = list(cases)
        for i in range(rounds):
            for name in names if i % 2 else names[::-1]:
                t0 = time.perf_counter()
                subprocess.run(cases[name], stderr=subprocess.DEVNULL, check=False)
                times[name].append(time.perf_counter() - t0)
    for name in names:
        ordered = sorted(times[name])
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        print(f"{name:24s} median {statistics.median(ordered) * 1e3:.3f} ms  p90 {p90 * 1e3:.3f} ms")
    extra = statistics.median(times["through the trampoline"]) - statistics.median(times["/bin/true"])
    print(f"trampoline: +{extra * 1e3:.3f} ms per run (median difference)")


if __name__ == "__main__":
    main()
