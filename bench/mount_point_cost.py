#!/usr/bin/env python3
"""Cost of making and removing one mount point of the bwrap backend's mask of a missing name.

    python3 bench/mount_point_cost.py [DIR] [ROUNDS]

Interleaved, round by round: an empty directory (mkdir + rmdir: the mount point before the
file mask) and an empty regular file (open O_CREAT|O_EXCL|O_NOFOLLOW 0444 + unlink: since),
and a socket inode (socket + bind through the parent's descriptor + close, then unlink: the
mount point of the filemask-socket branch), all in DIR (default: a fresh directory under /tmp). Prints the median and the 90th, 99th
percentile and maximum of each step in microseconds. On a filesystem mounted with `discard`
the rmdir frees the directory's data block with a synchronous discard; the file has none.
"""
import os
import socket
import sys
import tempfile
import time

base = sys.argv[1] if len(sys.argv) > 1 else None
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2001
work = tempfile.mkdtemp(prefix="sbx-mp-", dir=base or "/tmp")
path = os.path.join(work, ".codex")
now = time.perf_counter_ns
steps = {"mkdir": [], "rmdir": [], "creat": [], "unlink": [], "bind": [], "unlink_s": []}


def timed(name, fn):
    t0 = now()
    fn()
    steps[name].append((now() - t0) / 1000)


def make_file():
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o444))


parent = os.open(work, os.O_PATH | os.O_DIRECTORY)


def make_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(f"/proc/self/fd/{parent}/.codex")
    s.close()


try:
    for _ in range(rounds):
        timed("bind", make_socket)
        timed("unlink_s", lambda: os.unlink(path))
        timed("mkdir", lambda: os.mkdir(path, 0o755))
        timed("rmdir", lambda: os.rmdir(path))
        timed("creat", make_file)
        timed("unlink", lambda: os.unlink(path))
finally:
    os.rmdir(work)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


print(f"{rounds} rounds in {work} (median / p90 / p99 / max, us)")
for name, values in steps.items():
    print(f"  {name:7s} {pct(values, 0.5):8.1f} {pct(values, 0.9):8.1f} {pct(values, 0.99):8.1f}"
          f" {max(values):8.1f}")
dir_total = [a + b for a, b in zip(steps["mkdir"], steps["rmdir"])]
file_total = [a + b for a, b in zip(steps["creat"], steps["unlink"])]
sock_total = [a + b for a, b in zip(steps["bind"], steps["unlink_s"])]
print(f"  directory make+remove: median {pct(dir_total, 0.5):.1f}, p99 {pct(dir_total, 0.99):.1f}")
print(f"  file make+remove:      median {pct(file_total, 0.5):.1f}, p99 {pct(file_total, 0.99):.1f}")
print(f"  socket make+remove:    median {pct(sock_total, 0.5):.1f}, p99 {pct(sock_total, 0.99):.1f}")
