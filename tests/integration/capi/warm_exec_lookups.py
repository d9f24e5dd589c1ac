#!/usr/bin/env python3
"""How often a warm C API Landlock run looks up where libsbx is installed.

    warm_exec_lookups.py --prefix PREFIX

Loads the installed libsbx (ctypes, as a binding would), makes one landlock manager, runs
`sbx_exec` of read-only /bin/true RUNS times, under `strace -f -e trace=readlink`, for two
values of RUNS. Every lookup of the install resolves the loaded libsbx.so name with realpath,
which readlinks that name once; the difference between the two traces, divided by the
difference in runs, is what one more warm run costs: one lookup (policy resolution's, which
keeps the install read-only). A read-only policy has no writable root for the install to be
carved out of, so the capability needs must not look it up a second time
(core/src/run/manager.cpp, add_install_needs).

Exit 77 (ctest's skip code) without strace or without a usable Landlock backend.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import libsbx_ctypes

SKIP = 77


def run_child(lib_path, runs, cwd):
    """RUNS warm sbx_exec calls (after one that probes): exit 0, or SKIP without landlock."""
    lib = libsbx_ctypes.load(lib_path)
    error = ctypes.c_void_p()
    manager = lib.sbx_manager_new(b"landlock", ctypes.byref(error))
    if not manager:
        return 2
    argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
    policy = b'{"version":1,"preset":"read-only"}'
    for i in range(runs + 1):
        report = lib.sbx_exec(manager, policy, cwd.encode(), argv, None, 0, ctypes.byref(error))
        if not report:
            return 2
        text = ctypes.string_at(report).decode()
        lib.sbx_string_free(report)
        if '"backend":"landlock"' not in text.replace(" ", ""):
            return SKIP if i == 0 else 2  # no usable Landlock here
        if '"code":0' not in text.replace(" ", ""):
            print(text, file=sys.stderr)
            return 2
    lib.sbx_manager_free(manager)
    return 0


def lookups(script, lib_path, runs, work):
    trace = os.path.join(work, f"trace-{runs}")
    child = subprocess.run(["strace", "-f", "-qq", "-e", "trace=readlink,readlinkat", "-o",
                            trace, sys.executable, script, "--child", lib_path, str(runs), work])
    if child.returncode != 0:
        sys.exit(child.returncode)
    with open(trace) as f:
        return sum(line.count(f'"{lib_path}"') for line in f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix")
    parser.add_argument("--child", nargs=3, metavar=("LIB", "RUNS", "CWD"))
    args = parser.parse_args()
    if args.child:
        return run_child(args.child[0], int(args.child[1]), args.child[2])
    if subprocess.run(["sh", "-c", "command -v strace"], capture_output=True).returncode != 0:
        print("strace is not installed (bootstrap-debian.sh)")
        return SKIP
    lib_path = libsbx_ctypes.libsbx_under(args.prefix)
    with tempfile.TemporaryDirectory(prefix="sbx-warm-lookups-", dir="/tmp") as work:
        few, many = 2, 6
        base = lookups(os.path.abspath(__file__), lib_path, few, work)
        more = lookups(os.path.abspath(__file__), lib_path, many, work)
    per_run = (more - base) / (many - few)
    print(f"readlink of {lib_path}: {base} with {few} warm runs, {more} with {many}: "
          f"{per_run:g} per run")
    if per_run != 1:
        print("expected one lookup of the install per warm read-only run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
