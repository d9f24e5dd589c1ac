#!/usr/bin/env python3
"""A process whose descriptors 0-2 are close-on-exec still hands them to the command.

Node marks its own 0-2 close-on-exec at start-up (libuv); a command started through libsbx from
such a process used to run without stdin and stdout ("Bad file descriptor"). Here a child Python
marks its 0-2 close-on-exec (os.set_inheritable(fd, False)) and runs, through the installed
libsbx, `sh -c 'read line; echo out:$line; echo err:$line >&2'` with sbx_exec and with
sbx_run_start (SBX_STDIO_INHERIT), under bwrap, landlock and without a sandbox; the parent feeds
its stdin and reads its stdout and stderr."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libsbx_ctypes  # noqa: E402

POLICY = json.dumps({
    "version": 1,
    "filesystem": {"kind": "restricted", "protected_names": [],
                   "entries": [{"path": ":root", "access": "read"},
                               {"path": ":cwd", "access": "write"}]},
    "network": {"mode": "restricted"},
})
SCRIPT = 'read line; echo "out:$line"; echo "err:$line" >&2'
SBX_EXEC_ALLOW_UNSANDBOXED = 1


class Stdio(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("fd", ctypes.c_int), ("max_bytes", ctypes.c_size_t),
                ("data", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class RunOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("policy_json", ctypes.c_char_p),
                ("cwd", ctypes.c_char_p), ("argv", ctypes.POINTER(ctypes.c_char_p)),
                ("preference", ctypes.c_char_p), ("flags", ctypes.c_uint),
                ("stdio", Stdio * 3), ("env_set", ctypes.POINTER(ctypes.c_char_p)),
                ("env_unset", ctypes.POINTER(ctypes.c_char_p)),
                ("timeout_ms", ctypes.c_ulonglong)]


def take(lib, result, error):
    """The string a call returned (freed), or raises with the error's message."""
    if not result:
        message = lib.sbx_error_message(error.value).decode()
        raise RuntimeError(message)
    text = ctypes.string_at(result).decode()
    lib.sbx_string_free(result)
    return text


def child(prefix, backend, how, report_path):
    for fd in (0, 1, 2):
        os.set_inheritable(fd, False)
    lib = libsbx_ctypes.load(libsbx_ctypes.libsbx_under(prefix))
    out_error = ctypes.POINTER(ctypes.c_void_p)
    lib.sbx_explain.restype = ctypes.c_void_p
    lib.sbx_explain.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.c_char_p, out_error]
    lib.sbx_run_start.restype = ctypes.c_void_p
    lib.sbx_run_start.argtypes = [ctypes.c_void_p, ctypes.POINTER(RunOptions), out_error]
    lib.sbx_run_wait.restype = ctypes.c_void_p
    lib.sbx_run_wait.argtypes = [ctypes.c_void_p, out_error]
    lib.sbx_run_free.argtypes = [ctypes.c_void_p]
    error = ctypes.c_void_p()
    cwd = tempfile.mkdtemp()
    bare = backend == "none"
    manager = lib.sbx_manager_new(b"no-such-backend" if bare else backend.encode(),
                                  ctypes.byref(error))
    if not manager:
        raise RuntimeError(lib.sbx_error_message(error.value).decode())
    if not bare:
        explained = json.loads(take(lib, lib.sbx_explain(manager, POLICY.encode(), cwd.encode(),
                                                         None, ctypes.byref(error)), error))
        if explained.get("available_backend") != backend:
            with open(report_path, "w") as out:
                json.dump({"skip": f"{backend} cannot run the policy here"}, out)
            return 0
    argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", SCRIPT.encode(), None)
    flags = SBX_EXEC_ALLOW_UNSANDBOXED if bare else 0
    if how == "exec":
        report = take(lib, lib.sbx_exec(manager, POLICY.encode(), cwd.encode(), argv, None, flags,
                                        ctypes.byref(error)), error)
    else:
        options = RunOptions()  # zeroed: every stream SBX_STDIO_INHERIT
        options.struct_size = ctypes.sizeof(RunOptions)
        options.policy_json = POLICY.encode()
        options.cwd = cwd.encode()
        options.argv = argv
        options.flags = flags
        run = lib.sbx_run_start(manager, ctypes.byref(options), ctypes.byref(error))
        if not run:
            raise RuntimeError(lib.sbx_error_message(error.value).decode())
        report = take(lib, lib.sbx_run_wait(run, ctypes.byref(error)), error)
        lib.sbx_run_free(run)
    lib.sbx_manager_free(manager)
    with open(report_path, "w") as out:
        out.write(report)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--child", nargs=3, metavar=("BACKEND", "HOW", "REPORT"))
    args = parser.parse_args()
    if args.child:
        return child(args.prefix, *args.child)
    failures = []
    ran = 0
    for backend in ("bwrap", "landlock", "none"):
        for how in ("exec", "run"):
            with tempfile.NamedTemporaryFile(suffix=".json") as report_file:
                done = subprocess.run(
                    [sys.executable, __file__, "--prefix", args.prefix, "--child", backend, how,
                     report_file.name],
                    input=b"hello\n", capture_output=True, timeout=120, check=False)
                label = f"{backend}/{how}"
                text = open(report_file.name).read()
            if done.returncode != 0 or not text:
                failures.append(f"{label}: exit {done.returncode}, stderr: {done.stderr!r}")
                continue
            report = json.loads(text)
            if "skip" in report:
                print(f"{label}: skipped: {report['skip']}")
                continue
            ran += 1
            problems = []
            if done.stdout != b"out:hello\n":
                problems.append(f"stdout {done.stdout!r}")
            if b"err:hello\n" not in done.stderr:
                problems.append(f"stderr {done.stderr!r}")
            if (report.get("exit") or {}).get("shell_code") != 0:
                problems.append(f"report {text}")
            if problems:
                failures.append(f"{label}: " + "; ".join(problems))
            else:
                print(f"{label}: the command had stdin, stdout and stderr")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print(f"{ran} runs from a process with close-on-exec 0-2 had their stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
