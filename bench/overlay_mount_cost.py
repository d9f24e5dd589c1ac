#!/usr/bin/env python3
"""What one copy-on-write toolchain cache costs a run (core/src/caches/README.md): one overlay
mount as sbx-stage2 makes it (mount(2), "userxattr,index=off"), the same through the new mount
API (fsopen/fsconfig/fsmount/move_mount), one bind mount, and the overlay's unmount after a
write (it syncs the upper filesystem) with and without "volatile", in an unprivileged user
namespace, the upper layer on the filesystem of DIR (where the project's layers are: ~/.cache);
then which capabilities a command inside a bwrap sandbox needs to mount one (bubblewrap 0.8 has
no --overlay).

    python3 bench/overlay_mount_cost.py [DIR] [ROUNDS]

DIR defaults to ~/.cache; a scratch directory is made in it and removed. Run as a user who can
create user namespaces (root, or a user where unprivileged user namespaces are allowed). The
variants alternate round by round; medians."""
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MS_BIND = 4096
MS_NOSUID = 2
MS_NODEV = 4
MNT_DETACH = 2
# x86_64 system call numbers (asm/unistd_64.h) and their flags (linux/mount.h).
SYS_MOVE_MOUNT, SYS_FSOPEN, SYS_FSCONFIG, SYS_FSMOUNT = 429, 430, 431, 432
FSCONFIG_SET_FLAG, FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE = 0, 1, 6
MOVE_MOUNT_F_EMPTY_PATH = 4
AT_FDCWD = -100


def measure(scratch, rounds):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    merged = os.path.join(scratch, "merged").encode()
    layers = {"lowerdir": scratch + "/lower", "upperdir": scratch + "/upper",
              "workdir": scratch + "/work"}
    options = (",".join(k + "=" + v for k, v in layers.items()) + ",userxattr,index=off").encode()

    def fail(what):
        sys.exit(what + ": " + os.strerror(ctypes.get_errno()))

    def with_mount2():
        if libc.mount(b"overlay", merged, b"overlay", MS_NOSUID | MS_NODEV, options) != 0:
            fail("overlay mount")

    def with_new_api():
        fs = libc.syscall(SYS_FSOPEN, b"overlay", 0)
        if fs < 0:
            fail("fsopen")
        for key, value in layers.items():
            if libc.syscall(SYS_FSCONFIG, fs, FSCONFIG_SET_STRING, key.encode(), value.encode(),
                            0) != 0:
                fail("fsconfig " + key)
        for flag in (b"userxattr",):
            if libc.syscall(SYS_FSCONFIG, fs, FSCONFIG_SET_FLAG, flag, None, 0) != 0:
                fail("fsconfig userxattr")
        if libc.syscall(SYS_FSCONFIG, fs, FSCONFIG_SET_STRING, b"index", b"off", 0) != 0:
            fail("fsconfig index")
        if libc.syscall(SYS_FSCONFIG, fs, FSCONFIG_CMD_CREATE, None, None, 0) != 0:
            fail("fsconfig create")
        mnt = libc.syscall(SYS_FSMOUNT, fs, 0, 0)
        if mnt < 0:
            fail("fsmount")
        if libc.syscall(SYS_MOVE_MOUNT, mnt, b"", AT_FDCWD, merged, MOVE_MOUNT_F_EMPTY_PATH) != 0:
            fail("move_mount")
        os.close(mnt)
        os.close(fs)

    def with_bind():
        if libc.mount(os.path.join(scratch, "upper").encode(), merged, None, MS_BIND, None) != 0:
            fail("bind mount")

    # The unmount of an overlay with an upper layer syncs the upper filesystem
    # (generic_shutdown_super -> sync_filesystem -> ovl_sync_fs), unless it was mounted
    # "volatile" (Linux 5.10), which then needs work/work removed before the next mount.
    def clear_work():
        work = os.path.join(scratch, "work", "work")
        if os.path.exists(work):
            subprocess.run(["chmod", "-R", "u+rwx", work], check=False)
            shutil.rmtree(work)

    def unmount_after_write(extra):
        def run():
            clear_work()
            if libc.mount(b"overlay", merged, b"overlay", MS_NOSUID | MS_NODEV,
                          options + extra) != 0:
                fail("overlay mount")
            with open(os.path.join(merged.decode(), "written"), "w", encoding="utf-8") as out:
                out.write("x" * 4096)
            start = time.perf_counter()
            if libc.umount2(merged, 0) != 0:
                fail("umount")
            elapsed = time.perf_counter() - start
            clear_work()  # a volatile mount's marker would refuse the next mount
            return elapsed
        return run

    variants = {"overlay mount(2)": with_mount2, "overlay fsopen/fsmount": with_new_api,
                "bind mount": with_bind}
    unmounts = {"umount after a write": unmount_after_write(b""),
                "the same, volatile": unmount_after_write(b",volatile")}
    times = {name: [] for name in list(variants) + list(unmounts)}
    names = list(variants)
    for i in range(rounds):
        for name in names if i % 2 == 0 else reversed(names):
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
            libc.umount2(merged, MNT_DETACH)
        for name in unmounts if i % 2 == 0 else reversed(list(unmounts)):
            times[name].append(unmounts[name]())
    print(f"{rounds} rounds, upper layer in {scratch}, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}:")
    for name, values in times.items():
        print(f"  {name:24} median {statistics.median(values) * 1e6:8.1f} us")


def bwrap_needs(scratch):
    options = "lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work".format(scratch)
    for caps in (["CAP_SYS_ADMIN"], ["CAP_SYS_ADMIN", "CAP_DAC_OVERRIDE"]):
        argv = ["bwrap", "--dev-bind", "/", "/", "--unshare-user"]
        for cap in caps:
            argv += ["--cap-add", cap]
        argv += ["mount", "-t", "overlay", "overlay", "-o", options, os.path.join(scratch, "merged")]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        words = "mounts" if result.returncode == 0 else "fails: " + result.stderr.strip().split("\n")[0]
        print(f"bwrap --unshare-user --cap-add {' --cap-add '.join(caps)}: mount -t overlay {words}")
        for sub in ("upper", "work"):  # fresh ones for the next try (overlayfs makes work/work 000)
            subprocess.run(["chmod", "-R", "u+rwx", os.path.join(scratch, sub)], check=False)
            shutil.rmtree(os.path.join(scratch, sub), ignore_errors=True)
            os.mkdir(os.path.join(scratch, sub))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        measure(sys.argv[2], int(sys.argv[3]))
        return
    parent = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache")
    rounds = sys.argv[2] if len(sys.argv) > 2 else "101"
    scratch = tempfile.mkdtemp(prefix="sbx-overlay-", dir=parent)
    try:
        for sub in ("lower", "upper", "work", "merged"):
            os.mkdir(os.path.join(scratch, sub))
        with open(os.path.join(scratch, "lower", "cached"), "w", encoding="utf-8") as out:
            out.write("from the host's cache\n")
        subprocess.run(["unshare", "-Urm", sys.executable, __file__, "--inside", scratch, rounds],
                       check=True)
        if shutil.which("bwrap"):
            bwrap_needs(scratch)
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", scratch], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
