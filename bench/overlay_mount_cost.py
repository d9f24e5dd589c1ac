#!/usr/bin/env python3
"""Why the toolchain caches are not an overlay (core/src/caches/README.md): what one overlay
mount costs against one bind mount, in an unprivileged user namespace, with its upper layer on
the filesystem of DIR (where the project's cache would be: ~/.cache); and which capabilities a
command inside a bwrap sandbox needs to mount one (bubblewrap 0.8 has no --overlay).

    python3 bench/overlay_mount_cost.py [DIR] [ROUNDS]

DIR defaults to ~/.cache; a scratch directory is made in it and removed. Run as a user who can
create user namespaces (root, or a user where unprivileged user namespaces are allowed)."""
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MS_BIND = 4096
MNT_DETACH = 2


def measure(scratch, rounds):
    libc = ctypes.CDLL(None, use_errno=True)
    merged = os.path.join(scratch, "merged").encode()
    options = ("lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work".format(scratch)).encode()
    overlay, bind = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        if libc.mount(b"overlay", merged, b"overlay", 0, options) != 0:
            sys.exit("overlay mount: " + os.strerror(ctypes.get_errno()))
        overlay.append(time.perf_counter() - start)
        libc.umount2(merged, MNT_DETACH)
        start = time.perf_counter()
        if libc.mount(os.path.join(scratch, "upper").encode(), merged, None, MS_BIND, None) != 0:
            sys.exit("bind mount: " + os.strerror(ctypes.get_errno()))
        bind.append(time.perf_counter() - start)
        libc.umount2(merged, MNT_DETACH)
    us = lambda values: statistics.median(values) * 1e6
    print(f"overlay mount: median {us(overlay):.1f} us; bind mount: median {us(bind):.1f} us "
          f"({rounds} rounds, upper layer in {scratch})")


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
