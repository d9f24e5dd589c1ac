#!/usr/bin/env python3
"""What a run's created-names check costs against the size of the trees it may write (issue #34).

`sbx exec --preset workspace-write -- /bin/true` and `-- sleep 1`, with 0, 10k and 100k
directories under /tmp and as many in the workspace, as root (the check learns what changed from
fanotify) and as uid 65534 (no fanotify: the scan reads the trees while the command runs and
checks them after it). Every case runs once per round, the order rotated round by round, so that
the load of the host spreads over all of them; medians of the wall-clock time and of the CPU time
of sbx's whole process tree (wait4's rusage of sbx, which waits for everything it starts).

Each run goes in a mount namespace of its own whose /tmp is that case's tree (a bind mount over
/tmp, on the same filesystem as the workspaces: one fanotify mark covers both), started in that
case's workspace with PWD there (the direct launch); only sbx itself is timed, not the set-up.

    python3 bench/created_names_sweep.py PREFIX/bin/sbx [ROUNDS] [SIZES] [OLD/bin/sbx]

ROUNDS defaults to 11, SIZES to 0,10000,100000; OLD, a second build run as root in the same
loop (the build before the events, say: its runs as root scan). ROOT_ONLY=1 leaves out the runs
as uid 65534 (a longer loop of the root runs alone: the scan's take seconds each at 100k). Needs root (mount namespaces, setuid to 65534;
the plugin loader trusts only a root-owned install). The trees are made under /var/tmp and
removed at the end, as is uid 65534's runtime directory, made for the sweep under /run (a private
state directory is needed: without one, sbx keeps no state and leaves its mask mount points
behind; not /run/user/65534, whose presence changes what the project's tests of uid 65534 see).
"""
import ctypes
import resource  # noqa: F401 (os.wait4 imports it; after setuid the import may fail)
import os
import shutil
import statistics
import sys
import tempfile
import time

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
NOBODY = 65534
FANOUT = 16

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def make_tree(root, count):
    """`count` directories below `root`, breadth first, FANOUT per directory (a tree some levels
    deep, as build trees and node_modules are)."""
    made = 0
    level = [root]
    while made < count:
        below = []
        for parent in level:
            for i in range(FANOUT):
                if made == count:
                    break
                path = os.path.join(parent, f"d{i}")
                os.mkdir(path, 0o755)
                below.append(path)
                made += 1
            if made == count:
                break
        level = below


def timed(sbx, command, tmp_tree, workspace, uid, runtime_dir):
    """(wall seconds, CPU seconds) of one sbx run, measured in a child that has set up the
    namespace and user first."""
    err_file = os.path.join(os.path.dirname(workspace), f"stderr-{uid}")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            check(libc.unshare(CLONE_NEWNS), "unshare")
            check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")
            check(libc.mount(tmp_tree.encode(), b"/tmp", None, MS_BIND, None), "bind over /tmp")
            env = {"PATH": "/usr/bin:/bin", "PWD": workspace, "LANG": "C.UTF-8"}
            if uid:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                env.update(HOME=runtime_dir, XDG_RUNTIME_DIR=runtime_dir)
            else:
                env["HOME"] = "/root"
            os.chdir(workspace)
            argv = [sbx, "--backends", "bwrap", "exec", "--preset", "workspace-write", "--",
                    *command]
            null = os.open("/dev/null", os.O_RDWR)
            err = os.open(err_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            start = time.perf_counter()
            child = os.posix_spawn(argv[0], argv, env, file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                (os.POSIX_SPAWN_DUP2, err, 2)])
            _, status, usage = os.wait4(child, 0)
            wall = time.perf_counter() - start
            cpu = usage.ru_utime + usage.ru_stime
            os.write(write_end, f"{wall} {cpu} {os.waitstatus_to_exitcode(status)}".encode())
            code = 0
        except Exception as error:  # reported by the parent
            os.write(write_end, f"error {error}".encode())
        finally:
            os._exit(code)
    os.close(write_end)
    report = b""
    while chunk := os.read(read_end, 4096):
        report += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    fields = report.decode().split()
    if not fields or fields[0] == "error" or fields[2] != "0":
        stderr = open(err_file, encoding="utf-8", errors="replace").read() if os.path.exists(
            err_file) else ""
        sys.exit(f"run failed ({report.decode()}): uid {uid}, {command}, /tmp={tmp_tree}\n{stderr}")
    return float(fields[0]), float(fields[1])


def main():
    if os.geteuid() != 0:
        sys.exit("run as root (mount namespaces, setuid to 65534)")
    sbx = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    sizes = [int(s) for s in (sys.argv[3] if len(sys.argv) > 3 else "0,10000,100000").split(",")]
    # Below /run (root's, 0755): no directory on the way that another user could write.
    runtime_dir = tempfile.mkdtemp(prefix="sbx-sweep-runtime-", dir="/run")
    os.chown(runtime_dir, NOBODY, NOBODY)
    base = tempfile.mkdtemp(prefix="sbx-sweep-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        for uid in (0, NOBODY):  # each user's stderr of the last run, shown when it fails
            with open(os.path.join(base, f"stderr-{uid}"), "w", encoding="utf-8"):
                pass
            os.chown(os.path.join(base, f"stderr-{uid}"), uid, uid)
        trees = {}
        for size in sizes:
            tmp_tree = os.path.join(base, f"tmp-{size}")
            workspace = os.path.join(base, f"ws-{size}")
            os.mkdir(tmp_tree)
            os.chmod(tmp_tree, 0o1777)
            os.mkdir(workspace)
            os.chown(workspace, NOBODY, NOBODY)  # root may write there too
            started = time.perf_counter()
            make_tree(tmp_tree, size)
            make_tree(workspace, size)
            print(f"made {size} + {size} directories in {time.perf_counter() - started:.1f} s",
                  flush=True)
            trees[size] = (tmp_tree, workspace)
        commands = {"true": ["/bin/true"], "sleep 1": ["/bin/sleep", "1"]}
        users = {"root (fanotify)": (sbx, 0)}
        if os.environ.get("ROOT_ONLY") != "1":
            users["uid 65534 (scan)"] = (sbx, NOBODY)
        if len(sys.argv) > 4:
            users["root, OLD build"] = (os.path.abspath(sys.argv[4]), 0)
        cases = [(user, name, size) for user in users for name in commands for size in sizes]
        for user, name, size in cases:  # warm the caches (and sbx's state directories)
            timed(users[user][0], commands[name], *trees[size], users[user][1], runtime_dir)
        results = {case: ([], []) for case in cases}
        print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
        for round_number in range(rounds):
            shift = round_number % len(cases)
            for case in cases[shift:] + cases[:shift]:
                user, name, size = case
                wall, cpu = timed(users[user][0], commands[name], *trees[size], users[user][1],
                                  runtime_dir)
                results[case][0].append(wall)
                results[case][1].append(cpu)
        print(f"load after: {os.getloadavg()[0]:.2f}; {rounds} rounds, {len(cases)} cases each,"
              f" rotated; " + ", ".join(f"{user} = {users[user][0]}" for user in users) + "\n")
        print("| user (check) | command | directories in /tmp + workspace | wall, median "
              "| CPU, median | vs empty trees: wall | CPU |")
        print("|---|---|---|---|---|---|---|")
        for user in users:
            for name in commands:
                base_wall = statistics.median(results[(user, name, sizes[0])][0])
                base_cpu = statistics.median(results[(user, name, sizes[0])][1])
                for size in sizes:
                    wall = statistics.median(results[(user, name, size)][0])
                    cpu = statistics.median(results[(user, name, size)][1])
                    if name == "true":
                        versus = f"{wall / base_wall:.2f}× | {cpu / base_cpu:.2f}×"
                    else:
                        versus = (f"{(wall - base_wall) * 1000:+.1f} ms | "
                                  f"{(cpu - base_cpu) * 1000:+.1f} ms")
                    print(f"| {user} | `{name}` | {size:,} + {size:,} | {wall * 1000:.1f} ms | "
                          f"{cpu * 1000:.1f} ms | {versus} |")
    finally:
        started = time.perf_counter()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(runtime_dir, ignore_errors=True)
        print(f"\nremoved the trees in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
