#!/usr/bin/env python3
"""A warm landlock manager sees a mount made or removed between two of its transforms.

    warm_mount_table.py --prefix PREFIX

The landlock backend keeps the device mounts it found in /proc/self/mountinfo between runs and
reads the table again only when the kernel signals a mount change (plugins/landlock/src/
module.cpp, DeviceMountTable). A kept answer that missed a new device filesystem would let a
rule over it open its device nodes, so: in a private mount namespace (a forked child; root
only), one manager transforms a read-only policy, a devpts instance is mounted under /tmp, the
same manager transforms again (the mount point must now be split out of the rule over /, like
/dev: never granted whole), the devpts is unmounted and the plan must be the first one again.
Also checks that the warm runs do not open /proc/self/mountinfo again (strace), which is the
point of keeping it.

Exit 77 (ctest's skip code) when not root, without strace, or without a usable Landlock backend.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import libsbx_ctypes

SKIP = 77
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18


class Sbx:
    def __init__(self, path):
        lib = libsbx_ctypes.load(path)
        self.lib = lib
        error = ctypes.c_void_p()
        self.manager = lib.sbx_manager_new(b"landlock", ctypes.byref(error))
        if not self.manager:
            sys.exit("sbx_manager_new failed")

    def plan(self, cwd):
        error = ctypes.c_void_p()
        argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
        out = self.lib.sbx_transform(self.manager, b'{"version":1,"preset":"read-only"}',
                                     cwd.encode(), argv, None, ctypes.byref(error))
        if not out:
            return None
        text = ctypes.string_at(out).decode()
        self.lib.sbx_string_free(out)
        return json.loads(text)


def run_child(lib_path, work):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0 or \
            libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        print(f"cannot make a private mount namespace: {os.strerror(ctypes.get_errno())}")
        return SKIP
    sbx = Sbx(lib_path)
    before = sbx.plan(work)
    if before is None or before.get("backend") != "landlock":
        print(f"no usable Landlock backend: {before}")
        return SKIP
    point = os.path.join(work, "pts")
    os.mkdir(point)
    if libc.mount(b"devpts", point.encode(), b"devpts", 0, b"newinstance") != 0:
        print(f"cannot mount devpts: {os.strerror(ctypes.get_errno())}")
        return SKIP
    mounted = sbx.plan(work)
    libc.umount2(point.encode(), 0)
    after = sbx.plan(work)
    failures = []
    argv_before, argv_mounted = before["argv"], mounted["argv"]
    # The rule over / is split down to the device mount: its parent is listed, and the mount
    # point itself gets no read rule (its entries would be device nodes).
    listed = any(argv_mounted[i:i + 2] == ["--ll-list", work] for i in range(len(argv_mounted)))
    if not listed:
        failures.append(f"the devpts mount at {point} is not split out of the rules: "
                        f"{argv_mounted}")
    if point in argv_mounted and argv_mounted[argv_mounted.index(point) - 1] == "--ll-read":
        failures.append(f"the devpts mount at {point} is readable: {argv_mounted}")
    if after["argv"] != argv_before:
        failures.append(f"after the unmount the plan differs from the first: {after['argv']}"
                        f" vs {argv_before}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "WORK"))
    args = parser.parse_args()
    if args.child:
        return run_child(*args.child)
    if os.geteuid() != 0:
        print("needs root (a private mount namespace and a devpts mount)")
        return SKIP
    lib_path = libsbx_ctypes.libsbx_under(args.prefix)
    with tempfile.TemporaryDirectory(prefix="sbx-warm-mounts-", dir="/tmp") as work:
        work = os.path.realpath(work)
        trace = os.path.join(work, "trace")
        command = [sys.executable, os.path.abspath(__file__), "--child", lib_path, work]
        have_strace = subprocess.run(["sh", "-c", "command -v strace"],
                                     capture_output=True).returncode == 0
        if have_strace:
            command = ["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", trace] + command
        child = subprocess.run(command)
        if child.returncode != 0:
            return child.returncode
        if have_strace:
            with open(trace) as f:
                opens = sum(line.count('"/proc/self/mountinfo"') for line in f)
            # Three transforms, the first after a probe: the table is opened once.
            print(f"/proc/self/mountinfo opened {opens} time(s) in three transforms")
            if opens != 1:
                print("expected the mount table to be opened once and then polled",
                      file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
