"""Sbx.run, Sbx.popen and Sbx.run_async (sbx_run_start and friends) against a real libsbx and a
real sandbox: captured and streamed output, stdin, per-call environment, cap, time-out, cancel,
parallel runs, bad arguments, close() during a run.

Waits that could hang if a point did not hold are bounded by the run's own time-out (or a
bounded poll), so such a test fails instead of hanging; no assertion is on a duration except
"well under the command's own length"."""
import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import sbx
from conftest import WORKSPACE

_COUNTER = itertools.count()
# Bounds a run that should end by itself long before: a test whose point failed times out
# (and fails) instead of hanging.
GUARD = 120


def _marker(seconds=1000):
    """A `sleep` length no other process on the host has in its command line."""
    return f"{seconds}.{os.getpid()}{next(_COUNTER)}"


def _sleeping(marker):
    """The pids of the `sleep MARKER` processes (the host sees the sandbox's processes; argv[0]
    is "sleep" from a shell, its full path when sbx looked it up)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args[:2] and os.path.basename(args[0]) == b"sleep" and args[1:3] == [marker.encode(),
                                                                               b""]:
            found.append(pid)
    return found


def _poll(condition, what):
    for _ in range(3000):
        if condition():
            return
        time.sleep(0.02)
    pytest.fail(f"never happened: {what}")


def test_run_captures_stdout_and_stderr_separately(s, workspace, backend):
    result = s.run(WORKSPACE, ["sh", "-c", "echo out; echo err >&2; echo more; exit 3"],
                   cwd=workspace)
    assert isinstance(result, sbx.CompletedRun)
    assert result.returncode == 3 and result.signal is None
    assert result.stdout == b"out\nmore\n" and result.stderr == b"err\n"
    assert result.report["final"] == backend and result.report["error"] is None
    assert result.report["stdout_capture"] == {"bytes": 9, "dropped_bytes": 0, "truncated": False}
    assert not result.truncated and not result.timed_out and not result.cancelled
    with pytest.raises(subprocess.CalledProcessError) as failed:
        result.check()
    assert failed.value.returncode == 3 and failed.value.stdout == b"out\nmore\n"
    text = s.run(WORKSPACE, ["sh", "-c", "printf 'h\\303\\251\\n'; echo e >&2"], cwd=workspace,
                 text=True)
    assert text.stdout == "h\u00e9\n" and text.stderr == "e\n"
    text.check()  # exit 0, no error: nothing raised


def test_input_is_the_commands_stdin_and_without_it_stdin_is_dev_null(s, workspace, backend):
    assert s.run(WORKSPACE, ["cat"], cwd=workspace, input=b"alpha\0beta\n").stdout == \
        b"alpha\0beta\n"
    assert s.run(WORKSPACE, ["cat"], cwd=workspace, input="\u00e9\n", text=True).stdout == \
        "\u00e9\n"
    # More than a pipe holds, written while the command reads.
    assert s.run(WORKSPACE, ["wc", "-c"], cwd=workspace,
                 input=b"y" * (1 << 20)).stdout.strip() == b"1048576"
    # Never this process's stdin (an agent's may be its protocol pipe): here, for the call, a
    # pipe with a line waiting in it.
    read_end, write_end = os.pipe()
    os.write(write_end, b"not for the command\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        result = s.run(WORKSPACE, ["sh", "-c", "readlink /proc/self/fd/0; cat"], cwd=workspace)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert result.stdout == b"/dev/null\n"


ENV_POLICY = {"version": 1, "preset": "workspace-write",
              "environment": {"exclude": ["SBX_PY_EXCLUDED"], "set": {"SBX_PY_FIXED": "policy"}}}
SHOW_ENV = ["sh", "-c", 'echo "a=${SBX_PY_ADDED-none} r=${SBX_PY_REMOVED-none} '
            'x=${SBX_PY_EXCLUDED-none} f=${SBX_PY_FIXED-none} t=${SBX_PY_API_TOKEN-none}"']


def test_env_adds_and_removes_names_and_the_policy_wins(s, workspace, backend, monkeypatch):
    monkeypatch.setenv("SBX_PY_REMOVED", "inherited")
    before = s.run(ENV_POLICY, SHOW_ENV, cwd=workspace)
    assert before.stdout == b"a=none r=inherited x=none f=policy t=none\n"
    after = s.run(ENV_POLICY, SHOW_ENV, cwd=workspace, env={
        "SBX_PY_ADDED": "yes", "SBX_PY_REMOVED": None,
        # What the policy scrubs stays scrubbed, and its "set" wins over the caller's value:
        "SBX_PY_EXCLUDED": "leak", "SBX_PY_API_TOKEN": "hunter2", "SBX_PY_FIXED": "caller"})
    assert after.stdout == b"a=yes r=none x=none f=policy t=none\n", after
    # This process's environment is untouched.
    assert os.environ["SBX_PY_REMOVED"] == "inherited" and "SBX_PY_ADDED" not in os.environ


def test_a_capture_keeps_the_start_up_to_the_cap_and_says_it_was_cut(s, workspace, backend):
    result = s.run(WORKSPACE, ["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo oops >&2"],
                   cwd=workspace, max_output_bytes=1000)
    assert result.returncode == 0
    assert result.stdout == b"x" * 1000 and result.stderr == b"oops\n"
    assert result.truncated and result.stdout_truncated and not result.stderr_truncated
    assert result.report["stdout_capture"] == {"bytes": 1000, "dropped_bytes": 299000,
                                               "truncated": True}
    assert "truncated=True" in repr(result)


def test_a_timeout_ends_the_whole_run_and_the_report_says_so(s, workspace, backend):
    marker = _marker(seconds=40)
    started = time.monotonic()
    result = s.run(WORKSPACE, ["sh", "-c", f"sleep {marker} & sleep {marker}; wait"],
                   cwd=workspace, timeout=1)
    assert time.monotonic() - started < 20, "the time-out did not end the run"
    assert result.timed_out and not result.cancelled
    assert result.error_kind == "timed_out" and "timed out after 1000 ms" in result.error
    assert result.report["exit"] is not None, "the command ran, and the report says how it ended"
    assert _sleeping(marker) == [], "a process of the run survived its time-out"
    with pytest.raises(sbx.TimedOutError, match="timed out"):
        result.check()


def test_popen_streams_line_by_line_before_the_command_ends(s, workspace, backend):
    # Each line comes before the command can write the next: it waits for our answer.
    script = "for i in 1 2 3; do echo line$i; read answer; echo \"got $answer\" >&2; done"
    with s.popen(WORKSPACE, ["sh", "-c", script], stdin=sbx.PIPE, stdout=sbx.PIPE,
                 stderr=sbx.PIPE, cwd=workspace, timeout=GUARD, text=True) as p:
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        for i in range(1, 4):
            assert p.stdout.readline() == f"line{i}\n"
            assert not p.done
            p.stdin.write(f"a{i}\n")
            p.stdin.flush()
            assert p.stderr.readline() == f"got a{i}\n"
        assert p.stdout.read() == ""  # end of file: the command has ended
        assert p.wait() == 0
    assert p.report is not None and p.report["error"] is None and p.returncode == 0


def test_popen_hands_a_descriptor_of_ours_and_dev_null_to_the_command(s, workspace, backend):
    path = os.path.join(workspace, "out.txt")
    with open(path, "wb") as out:
        p = s.popen(WORKSPACE, ["sh", "-c", "cat; echo via-fd; echo err >&2"],
                    stdin=sbx.DEVNULL, stdout=out, stderr=out.fileno(), cwd=workspace,
                    timeout=GUARD)
        assert p.stdin is None and p.stdout is None and p.stderr is None
        assert p.wait() == 0
    with open(path, "rb") as f:
        assert sorted(f.read().splitlines()) == [b"err", b"via-fd"]


def test_cancel_ends_a_popen_run_whole(s, workspace, backend):
    marker = _marker()
    with s.popen(WORKSPACE, ["sh", "-c", f"sleep {marker} & echo ready; sleep {marker}; wait"],
                 stdout=sbx.PIPE, cwd=workspace, timeout=GUARD) as p:
        assert p.stdout.readline() == b"ready\n"
        _poll(lambda: len(_sleeping(marker)) == 2, "both sleeps started")
        p.cancel()
        p.kill()  # any number of times
        p.wait()
        assert p.stdout.read() == b""
    assert p.cancelled and not p.timed_out and p.error_kind == "cancelled"
    assert "cancelled" in p.report["error"]
    assert _sleeping(marker) == [], "a process of the run survived its cancel"
    with pytest.raises(sbx.CancelledError):
        p.check()


def test_a_block_that_raises_cancels_its_popen_run(s, workspace, backend):
    marker = _marker()
    with pytest.raises(RuntimeError, match="agent gave up"):
        with s.popen(WORKSPACE, ["sh", "-c", f"echo ready; sleep {marker}"], stdout=sbx.PIPE,
                     cwd=workspace, timeout=GUARD) as p:
            assert p.stdout.readline() == b"ready\n"
            raise RuntimeError("agent gave up")
    assert p.cancelled and _sleeping(marker) == []


# A Python program of its own, so that the SIGINT is a real one sent to the process (pytest's own
# handlers stay out of it): sbx.run of a long `sleep` on the main thread, as an agent's tool call.
_INTERRUPTED_RUN = """
import json, sys, time
import sbx
lib, workspace, marker = sys.argv[1:4]
with sbx.Sbx(lib) as s:
    print("running", flush=True)
    try:
        s.run({"version": 1, "preset": "workspace-write"}, ["sleep", marker], cwd=workspace,
              timeout=300)
        print("not interrupted", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
"""


def test_ctrl_c_reaches_python_during_run_and_cancels_the_run(lib_path, workspace, backend):
    """Issue #33: libsbx leaves the process's SIGINT to Python while a run goes on, so the
    KeyboardInterrupt comes at once; run() then cancels the run, whose whole process tree is
    gone before the exception reaches the caller (never a command left running)."""
    marker = _marker()
    proc = subprocess.Popen([sys.executable, "-c", _INTERRUPTED_RUN, lib_path, workspace, marker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "running\n"
        _poll(lambda: _sleeping(marker), "the command started")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    words = out.split()
    assert words[:1] == ["interrupted"], f"stdout: {out!r}, stderr: {err!r}"
    assert float(words[1]) - sent < 1.0, "the KeyboardInterrupt came late"
    assert _sleeping(marker) == [], "the interrupted run's command is still running"


def test_popen_wait_with_a_timeout_raises_and_the_run_goes_on(s, workspace, backend):
    with s.popen(WORKSPACE, ["sh", "-c", "read line; echo \"$line\""], stdin=sbx.PIPE,
                 stdout=sbx.PIPE, cwd=workspace, timeout=GUARD) as p:
        with pytest.raises(sbx.TimedOutError, match="still going"):
            p.wait(timeout=0.2)
        assert not p.done and p.report is None and p.returncode is None
        p.stdin.write(b"after the wait\n")
        p.stdin.close()
        assert p.stdout.read() == b"after the wait\n"
        assert p.wait(timeout=GUARD) == 0


def test_run_async_calls_go_on_at_once_and_the_loop_keeps_running(s, workspace, backend):
    # Each command says it started, then waits for a file that only this event loop makes,
    # once all four have started: they finish only if all four ran at the same time and the
    # loop was free to run the coroutine that makes it.
    script = ("touch started.$0; while [ ! -e go ]; do sleep 0.02; done; "
              "echo done $0; ls started.* | wc -l >&2")

    async def release():
        for _ in range(1000):
            started = [n for n in os.listdir(workspace) if n.startswith("started.")]
            if len(started) == 4:
                break
            await asyncio.sleep(0.02)
        open(os.path.join(workspace, "go"), "w").close()
        return len(started)

    async def main():
        runs = [s.run_async(WORKSPACE, ["sh", "-c", script, str(i)], cwd=workspace,
                            timeout=30, text=True) for i in range(4)]
        return await asyncio.gather(release(), *runs)

    started_before_go, *results = asyncio.run(main())
    assert started_before_go == 4, "the runs did not go on at the same time"
    for i, result in enumerate(results):
        assert not result.timed_out, result
        assert result.returncode == 0 and result.stdout == f"done {i}\n"
        assert result.stderr.strip() == "4"


def test_cancelling_a_run_async_task_ends_the_sandbox_first(s, workspace, backend):
    marker = _marker()

    async def main():
        task = asyncio.ensure_future(s.run_async(WORKSPACE, ["sleep", marker], cwd=workspace,
                                                 timeout=GUARD))
        for _ in range(3000):
            if _sleeping(marker):
                break
            await asyncio.sleep(0.02)
        assert _sleeping(marker), "the command never started"
        task.cancel()
        # Well before the run's own time-out (GUARD) would end it.
        await asyncio.wait({task}, timeout=GUARD / 2)
        assert task.done(), "cancelling the task did not end the run"
        with pytest.raises(asyncio.CancelledError):
            await task
        return _sleeping(marker)

    assert asyncio.run(main()) == [], "the task ended before its sandbox"


def test_bad_arguments_raise_invalid_input(s, workspace, backend):
    bad = [
        lambda: s.run(WORKSPACE, [], cwd=workspace),
        lambda: s.run(WORKSPACE, "echo hi", cwd=workspace),
        lambda: s.run(WORKSPACE, ["echo", "x\0; rm -rf ~"], cwd=workspace),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, env={"A=B": "C"}),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, env={"": "x"}),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, env={"A": 1}),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, env=["A=B"]),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, timeout=-1),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, timeout=float("nan")),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, max_output_bytes=0),
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, input=42),
        lambda: s.popen(WORKSPACE, ["true"], cwd=workspace, stdout="file.txt"),
        lambda: s.popen(WORKSPACE, ["true"], cwd=workspace, stdin=-7),
        # Refused by libsbx itself: an unknown preference, a descriptor that is not open, a
        # malformed policy, a command not found.
        lambda: s.run(WORKSPACE, ["true"], cwd=workspace, preference="sometimes"),
        lambda: s.popen(WORKSPACE, ["true"], cwd=workspace, stdout=9999),
        lambda: s.run({"version": 1, "preset": "no-such-preset"}, ["true"], cwd=workspace),
        lambda: s.run(WORKSPACE, ["sbx-no-such-command"], cwd=workspace),
        lambda: s.popen(WORKSPACE, ["sbx-no-such-command"], cwd=workspace).wait(),
        lambda: asyncio.run(s.run_async(WORKSPACE, ["true"], cwd=workspace, timeout=0)),
    ]
    for k, call in enumerate(bad):
        with pytest.raises(sbx.SbxError) as caught:
            call()
        assert caught.value.kind == "invalid_input", (k, caught.value)
        assert isinstance(caught.value, ValueError)
    with pytest.raises(sbx.SbxError, match="is not open"):
        s.popen(WORKSPACE, ["true"], cwd=workspace, stdout=9999)
    with pytest.raises(sbx.SbxError, match="command not found"):
        s.run(WORKSPACE, ["sbx-no-such-command"], cwd=workspace)


def test_closing_the_sbx_while_runs_go_on_cancels_them_safely(lib_path, workspace, backend):
    handle = sbx.Sbx(lib_path).open()
    streamed, waited = _marker(), _marker()
    p = handle.popen(WORKSPACE, ["sh", "-c", f"echo ready; sleep {streamed}"], stdout=sbx.PIPE,
                     cwd=workspace, timeout=GUARD)
    assert p.stdout.readline() == b"ready\n"
    results = []
    thread = threading.Thread(target=lambda: results.append(
        handle.run(WORKSPACE, ["sleep", waited], cwd=workspace, timeout=GUARD)))
    thread.start()
    _poll(lambda: _sleeping(waited), "the second run's command started")
    handle.close()  # returns once both runs have ended: sbx_manager_free waits for them
    assert _sleeping(streamed) == [] and _sleeping(waited) == []
    p.wait()
    thread.join()
    assert p.cancelled and results and results[0].cancelled
    p.stdout.close()
    # The handle opens a new manager on its next call, as after any close().
    assert handle.run(WORKSPACE, ["echo", "again"], cwd=workspace).stdout == b"again\n"
    handle.close()


def test_exec_still_runs_beside_the_new_runs(s, workspace, backend):
    with s.popen(WORKSPACE, ["sh", "-c", "read x"], stdin=sbx.PIPE, cwd=workspace,
                 timeout=GUARD) as p:
        report = s.exec(WORKSPACE, ["sh", "-c", "exit 4"], cwd=workspace)
        assert report["exit"]["code"] == 4 and not p.done
        p.stdin.write(b"\n")
    assert p.returncode == 0


# wrap (issue #33 point 3): a caller that spawns processes itself runs the command through the
# installed `sbx exec`: the policy on fd 3 (a pipe), the report on fd 4. The policy holds: a
# read-only one keeps the write out of the workspace.
def test_wrap_spawns_sbx_exec_with_the_policy_on_3_and_the_report_on_4(s, workspace, backend):
    wrapped = s.wrap({"version": 1, "preset": "read-only"},
                     ["sh", "-c", "echo out; touch made || echo refused >&2"], cwd=workspace)
    assert (wrapped["policy_fd"], wrapped["report_fd"]) == (3, 4)
    assert wrapped["argv"][0].endswith("/bin/sbx") and wrapped["argv"][1] == "exec"
    policy_r, policy_w = os.pipe()
    report_r, report_w = os.pipe()

    def place():  # in the child: the pipe ends at 3 and 4, kept open by pass_fds
        os.dup2(policy_r, 3)
        os.dup2(report_w, 4)

    child = subprocess.Popen(wrapped["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=place, pass_fds=(3, 4))
    os.close(policy_r)
    os.close(report_w)
    os.write(policy_w, wrapped["policy"].encode())
    os.close(policy_w)
    out, err = child.communicate(timeout=60)
    with os.fdopen(report_r) as f:
        report = json.loads(f.read())
    assert child.returncode == 0, err
    assert out == b"out\n"
    assert b"refused" in err
    assert not os.path.exists(os.path.join(workspace, "made")), "the read-only policy did not hold"
    assert report["should_sandbox"] is True and report["exit"]["code"] == 0
    with pytest.raises(sbx.InvalidInputError):
        s.wrap(WORKSPACE, [])
