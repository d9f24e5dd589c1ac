#!/usr/bin/env python3
"""Every figure of issue #34 from one command: sbx beside bare bwrap, /bin/true, Codex and
sandbox-runtime on the same work, the C API, parallel streams and the tree-size sweep.

    python3 bench/overview.py PREFIX [ROUNDS] [--no-peers] [--no-capi] [--no-parallel]
                              [--no-sweep] [--sizes 0,10000,100000]

PREFIX is an sbx install in trusted directories (root-owned; e.g. /opt/sbx or the test install
/opt/sbx-test/<hash>). Run as root on a quiet host (load < 1): the script prints the load before
and after. What it runs, in this order:

1. One loop of single runs, every case once per round, the order rotated round by round (each
   figure is a ratio or difference within that loop, never across loops): /bin/true, `sbx
   --version`, bare bwrap and `sbx exec` with only the cwd writable (bench/policies/cwd-only.json;
   started in the workspace with PWD there, so sbx takes its direct launch), bare bwrap and `sbx
   exec --preset workspace-write` (this host's /tmp as it is), `sbx --backends landlock exec
   --preset read-only`, and, unless --no-peers, Codex (`codex sandbox -P :workspace`) and
   sandbox-runtime (`srt` with the cwd writable), installed from the npm registry into
   ~/.cache/sbx-bench-peers by this script (never needed by the tests). Wall time per run and
   CPU time of the whole process tree (wait4); peak RSS of sbx's own process apart, as GNU time
   reports it (a child of this Python process would carry Python's RSS in ru_maxrss until its
   exec). The bare bwrap runs are the argv that
   `sbx debug bwrap` prints for the same policy, up to its "--", then /bin/true; the mount points
   bwrap makes there for missing protected names are removed after each bare run (untimed), as
   sbx removes its own.
2. The C API on a warm manager (bench/capi_overhead.sh: its own interleaved loop against bare
   bwrap and /bin/true), unless --no-capi; needs build/ci/tree/bin/sbx_bench_capi.
3. Four parallel streams of cwd-only runs, sbx and bare bwrap in alternating 3-second blocks:
   runs per second and their ratio; every run must exit 0.
4. The tree-size sweep (bench/created_names_sweep.py with --sizes), unless --no-sweep.

Targets (issue #34) are printed beside each figure; bench/README.md keeps the current table."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CWD_POLICY = os.path.join(HERE, "policies", "cwd-only.json")
PEERS_DIR = os.path.expanduser("~/.cache/sbx-bench-peers")
PEERS = ["@openai/codex", "@anthropic-ai/sandbox-runtime"]


def timed(argv, cwd, env):
    """(wall seconds, CPU seconds of the tree); raises when the run fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:6]} exited {proc.returncode}: {err[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime


def peak_rss_mib(argv, cwd, env, runs=5):
    """Median peak RSS of argv's own largest process, as GNU time reports it; None without it."""
    if not os.access("/usr/bin/time", os.X_OK):
        return None
    values = []
    with tempfile.NamedTemporaryFile(mode="r") as out:
        for _ in range(runs):
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *argv], cwd=cwd, env=env,
                           capture_output=True, check=False)
            out.seek(0)
            values.append(int(out.read().split()[-1]))
    return statistics.median(values) / 1024


def bare_bwrap(sbx, policy_args, work):
    """The bwrap argv `sbx debug bwrap` prints for the policy, up to "--", then /bin/true; and
    the mount points it creates for missing protected names."""
    plan = json.loads(subprocess.run(
        [sbx, "--backends", "bwrap", "debug", "bwrap", *policy_args, "--cwd", work, "--",
         "/bin/true"], check=True, capture_output=True, text=True).stdout)
    argv = plan["argv"]
    return argv[:argv.index("--")] + ["--", "/bin/true"], plan["host_paths"]["created"]


def remove_bare_mount_points(points, existed):
    """Removes the empty files and directories bwrap left where protected names were missing."""
    for point in points:
        if point in existed or os.path.islink(point):
            continue
        if os.path.isdir(point):
            try:
                os.rmdir(point)
            except OSError:
                pass
        elif os.path.isfile(point) and os.path.getsize(point) == 0:
            os.unlink(point)


def install_peers():
    """Codex and sandbox-runtime from the npm registry; {name: bin path} of those that run."""
    found = {}
    if shutil.which("npm") is None:
        print("peers: npm is missing (Debian: npm): Codex and sandbox-runtime left out")
        return found
    os.makedirs(PEERS_DIR, exist_ok=True)
    result = subprocess.run(["npm", "install", "--prefix", PEERS_DIR, "--no-audit", "--no-fund",
                             *PEERS], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(f"peers: npm install failed, left out: {result.stderr.strip()[-300:]}")
        return found
    for name in ("codex", "srt"):
        path = os.path.join(PEERS_DIR, "node_modules", ".bin", name)
        if os.access(path, os.X_OK):
            found[name] = path
    return found


def peer_cases(peers, work, scratch):
    cases = {}
    if "codex" in peers:
        cases["Codex (codex sandbox -P :workspace)"] = (
            [peers["codex"], "sandbox", "-P", ":workspace", "-C", work, "--", "/bin/true"], {})
    if "srt" in peers:
        settings = os.path.join(scratch, "srt-settings.json")
        with open(settings, "w", encoding="utf-8") as f:
            json.dump({"network": {"allowedDomains": [], "deniedDomains": []},
                       "filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}}, f)
        cases["sandbox-runtime (srt, cwd writable)"] = (
            [peers["srt"], "-s", settings, "/bin/true"], {})
    return cases


def check_runs(cases, work, env):
    """Each case once; those that fail here are left out with the reason."""
    usable = {}
    for name, (argv, extra) in cases.items():
        try:
            timed(argv, work, {**env, **extra})
            usable[name] = (argv, extra)
        except RuntimeError as e:
            print(f"left out: {name}: {e}")
    return usable


def single_runs(sbx, rounds, work, peers):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "PWD": work}
    bare_cwd, points_cwd = bare_bwrap(sbx, ["--policy", CWD_POLICY], work)
    bare_ws, points_ws = bare_bwrap(sbx, ["--preset", "workspace-write"], work)
    points = sorted(set(points_cwd + points_ws))
    existed = {p for p in points if os.path.lexists(p)}
    cases = {
        "/bin/true": (["/bin/true"], {}),
        "sbx --version": ([sbx, "--version"], {}),
        "bare bwrap, cwd only": (bare_cwd, {}),
        "sbx, cwd only": ([sbx, "--backends", "bwrap", "exec", "--policy", CWD_POLICY, "--",
                           "/bin/true"], {}),
        "bare bwrap, workspace-write": (bare_ws, {}),
        "sbx, workspace-write": ([sbx, "--backends", "bwrap", "exec", "--preset",
                                  "workspace-write", "--", "/bin/true"], {}),
        "sbx landlock, read-only": ([sbx, "--backends", "landlock", "exec", "--preset",
                                     "read-only", "--", "/bin/true"], {}),
    }
    scratch = tempfile.mkdtemp(prefix="sbx-overview-")
    try:
        cases.update(peer_cases(peers, work, scratch))
        cases = check_runs(cases, work, env)
        remove_bare_mount_points(points, existed)
        names = list(cases)
        results = {name: ([], []) for name in names}
        for round_number in range(rounds):
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                argv, extra = cases[name]
                wall, cpu = timed(argv, work, {**env, **extra})
                if name.startswith("bare bwrap"):
                    remove_bare_mount_points(points, existed)
                for column, value in zip(results[name], (wall, cpu)):
                    column.append(value)
        medians = {name: tuple(statistics.median(c) for c in columns)
                   for name, columns in results.items()}
        rss = {name: peak_rss_mib(cases[name][0], work, env) for name in
               ("sbx, workspace-write", "sbx landlock, read-only") if name in cases}
        return medians, rss
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def parallel(sbx, work, streams=4, blocks=3, seconds=3.0):
    """Runs per second of `streams` concurrent loops, sbx and bare bwrap in alternating blocks."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "PWD": work}
    bare, points = bare_bwrap(sbx, ["--policy", CWD_POLICY], work)
    existed = {p for p in points if os.path.lexists(p)}
    sides = {"sbx": [sbx, "--backends", "bwrap", "exec", "--policy", CWD_POLICY, "--",
                     "/bin/true"], "bare": bare}
    totals = {side: [0, 0.0] for side in sides}
    failures = []

    def loop(argv, deadline, counter, lock):
        while time.perf_counter() < deadline:
            result = subprocess.run(argv, cwd=work, env=env, capture_output=True, check=False)
            with lock:
                if result.returncode != 0:
                    failures.append(result.stderr.decode(errors="replace")[-300:])
                counter[0] += 1

    for block in range(2 * blocks):
        side = ("sbx", "bare")[(block + block // 2) % 2]
        counter, lock = [0], threading.Lock()
        started = time.perf_counter()
        threads = [threading.Thread(target=loop, args=(sides[side], started + seconds, counter,
                                                       lock)) for _ in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        totals[side][0] += counter[0]
        totals[side][1] += time.perf_counter() - started
        remove_bare_mount_points(points, existed)
    rate = {side: count / elapsed for side, (count, elapsed) in totals.items()}
    return rate, failures


def row(name, figure, baseline, target, met):
    verdict = "" if met is None else ("met" if met else "**not met**")
    print(f"| {name} | {figure} | {baseline} | {target} {verdict} |")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    if not args or os.geteuid() != 0:
        sys.exit(__doc__)
    prefix = os.path.abspath(args[0])
    rounds = int(args[1]) if len(args) > 1 else 31
    sizes = "0,10000,100000"
    for i, a in enumerate(sys.argv):
        if a == "--sizes" and i + 1 < len(sys.argv):
            sizes = sys.argv[i + 1]
    sbx = os.path.join(prefix, "bin", "sbx")
    peers = {} if "--no-peers" in flags else install_peers()
    work = tempfile.mkdtemp(prefix="sbx-overview-ws-")
    try:
        print(f"sbx {sbx}; rounds {rounds}; load before {os.getloadavg()[0]:.2f}", flush=True)
        med, rss = single_runs(sbx, rounds, work, peers)
        print(f"\nload after the single runs {os.getloadavg()[0]:.2f}\n")
        print("| run (median of the loop) | wall | CPU (tree) |")
        print("|---|---|---|")
        for name, (wall, cpu) in med.items():
            print(f"| {name} | {wall * 1000:.2f} ms | {cpu * 1000:.2f} ms |")
        print("\n| figure | value | baseline, same loop | target (issue #34) |")
        print("|---|---|---|---|")

        def ratio(a, b):
            return med[a][0] / med[b][0]

        if {"sbx, cwd only", "bare bwrap, cwd only"} <= med.keys():
            r = ratio("sbx, cwd only", "bare bwrap, cwd only")
            row("CLI, cwd only / bare bwrap", f"{r:.2f}×",
                f"{med['bare bwrap, cwd only'][0] * 1000:.2f} ms", "≤ 1.6×", r <= 1.6)
        if {"sbx, workspace-write", "bare bwrap, workspace-write"} <= med.keys():
            r = ratio("sbx, workspace-write", "bare bwrap, workspace-write")
            row("CLI, workspace-write / bare bwrap", f"{r:.2f}×",
                f"{med['bare bwrap, workspace-write'][0] * 1000:.2f} ms", "≤ 1.7×", r <= 1.7)
        if "sbx landlock, read-only" in med:
            d = (med["sbx landlock, read-only"][0] - med["/bin/true"][0]) * 1000
            row("Landlock CLI − /bin/true", f"+{d:.2f} ms",
                f"{med['/bin/true'][0] * 1000:.2f} ms", "≤ +2.2 ms", d <= 2.2)
        r = ratio("sbx --version", "/bin/true")
        row("`sbx --version` / /bin/true", f"{r:.2f}×", f"{med['/bin/true'][0] * 1000:.2f} ms",
            "≤ 1.3×", r <= 1.3)
        for name, mib in rss.items():
            if mib is not None:
                row(f"peak RSS, {name} (GNU time)", f"{mib:.1f} MiB", "—", "≤ 8 MiB", mib <= 8)
        for name in med:
            if name.startswith(("Codex", "sandbox-runtime")) and "sbx, cwd only" in med:
                row(f"{name} / sbx cwd only", f"{ratio(name, 'sbx, cwd only'):.2f}×",
                    f"{med['sbx, cwd only'][0] * 1000:.2f} ms", "(peer)", None)
        if "--no-parallel" not in flags:
            rate, failures = parallel(sbx, work)
            r = rate["sbx"] / rate["bare"]
            row("4 parallel streams, cwd only: sbx / bare bwrap runs per second",
                f"{rate['sbx']:.1f} / {rate['bare']:.1f} = {r:.2f}×", "—", "≥ 0.75×",
                r >= 0.75 and not failures)
            if failures:
                print(f"\n{len(failures)} parallel runs failed; the first: {failures[0]}")
        sys.stdout.flush()
        if "--no-capi" not in flags:
            print("\nC API, warm manager (bench/capi_overhead.sh; targets bwrap ≤ 1.3× bare "
                  "bwrap, Landlock ≤ +0.6 ms):", flush=True)
            subprocess.run(["bash", os.path.join(HERE, "capi_overhead.sh"), prefix,
                            str(rounds)], check=False)
        if "--no-sweep" not in flags:
            print(f"\nTree-size sweep ({sizes} directories; target ≤ 1.1× wall and CPU, a 1 s "
                  "command ≤ +2 ms):", flush=True)
            subprocess.run([sys.executable, os.path.join(HERE, "created_names_sweep.py"), sbx,
                            str(max(3, rounds // 5)), sizes], check=False)
        print(f"\nload at the end {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
