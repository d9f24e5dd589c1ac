"""The Python binding against a real libsbx: every call of the C API, real sandboxed runs."""
import http.server
import os
import shutil
import signal
import sys
import sysconfig
import tempfile
import threading
import time

import pytest

import sbx
from conftest import NO_BACKEND, WORKSPACE

DENY_SSH = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
    {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
    {"path": "~/.ssh", "access": "deny"}]}}
FULL = {"version": 1, "preset": "danger-full-access"}


def test_the_installed_package_is_tested():
    # ctest installs the package with pip into a venv; SBX_EXPECT_INSTALLED names its prefix.
    expected = os.environ.get("SBX_EXPECT_INSTALLED")
    if not expected:
        pytest.skip("SBX_EXPECT_INSTALLED not set: testing whichever sbx is importable")
    assert os.path.realpath(sbx.__file__).startswith(os.path.realpath(expected))
    assert os.path.exists(os.path.join(os.path.dirname(sbx.__file__), "py.typed"))


@pytest.mark.parametrize("libdir", ["lib", "lib/multiarch"])
def test_find_library_in_a_prefix_of_either_layout(libdir, tmp_path):
    # A prefix installed with libdir "lib" (cmake --install's default) or Debian's
    # lib/<triplet> (the .debs, a /usr build): the versioned file, not the development link.
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if libdir == "lib/multiarch":
        if not multiarch:
            pytest.skip("this interpreter names no multiarch triplet (sysconfig MULTIARCH)")
        libdir = f"lib/{multiarch}"
    (tmp_path / libdir).mkdir(parents=True)
    for name in ("libsbx.so", "libsbx.so.0.1", "libsbx.so.0.1.0"):
        (tmp_path / libdir / name).write_text("")
    assert sbx.find_library(str(tmp_path)) == str(tmp_path / libdir / "libsbx.so.0.1")
    with pytest.raises(sbx.HostFailureError, match="pass the installation prefix"):
        sbx.find_library(str(tmp_path / "elsewhere"))


def test_version_matches_the_package(s):
    assert s.version() == sbx.__version__


def test_should_sandbox(s):
    decision = s.should_sandbox(WORKSPACE)
    assert decision["sandbox"] is True and decision["reason"]
    assert s.should_sandbox(FULL)["sandbox"] is False
    # The policy as text works the same.
    assert s.should_sandbox('{"version":1,"preset":"read-only"}')["sandbox"] is True


def test_errors_are_sbx_errors_with_libsbx_message(s):
    with pytest.raises(sbx.SbxError, match="forbid"):
        s.should_sandbox(DENY_SSH, "forbid")
    with pytest.raises(sbx.SbxError, match="preset"):
        s.should_sandbox({"version": 1, "preset": "no-such-preset"})
    with pytest.raises(sbx.SbxError):
        s.exec(WORKSPACE, [])
    with pytest.raises(sbx.SbxError, match="preset"):
        s.exec({"version": 1, "preset": "no-such-preset"}, ["true"])


def test_each_kind_is_its_own_subclass_with_kind(s, lib_path):
    # invalid_input: a malformed policy, an unknown preference, a bad argv (also ValueError).
    with pytest.raises(sbx.InvalidInputError, match="/filesystem/kind") as caught:
        s.should_sandbox({"version": 1, "filesystem": {"kind": "nope"}})
    assert caught.value.kind == "invalid_input" and isinstance(caught.value, sbx.SbxError)
    with pytest.raises(sbx.InvalidInputError, match="sometimes"):
        s.should_sandbox(WORKSPACE, "sometimes")
    with pytest.raises(ValueError, match="argv"):
        s.exec(WORKSPACE, [])
    # refused: a policy with deny entries never runs unsandboxed.
    with pytest.raises(sbx.RefusedError, match="forbid") as caught:
        s.should_sandbox(DENY_SSH, "forbid")
    assert caught.value.kind == "refused"
    # unavailable: a sandbox is wanted and the only backend allowed does not exist.
    with sbx.Sbx(lib_path, backends="no-such-backend") as none:
        with pytest.raises(sbx.UnavailableError, match="no backend") as caught:
            none.transform(WORKSPACE, ["true"])
        assert caught.value.kind == "unavailable"
    # host_failure: a library that cannot be loaded, with what to do (never a raw OSError).
    with pytest.raises(sbx.HostFailureError, match="cannot load libsbx.*SBX_LIBRARY") as caught:
        sbx.Sbx("/nonexistent/libsbx.so.0")
    assert caught.value.kind == "host_failure"
    # Every kind has its class, in sbx_error_kind's order; an unknown value is host_failure.
    assert list(sbx.ERROR_KINDS) == ["invalid_input", "refused", "unavailable", "backend_failure",
                                     "host_failure", "timed_out", "cancelled"]
    for value, (kind, cls) in enumerate(sbx.ERROR_KINDS.items()):
        error = sbx._error(value, "m")
        assert type(error) is cls and error.kind == kind and str(error) == "m"
    assert type(sbx._error(99, "m")) is sbx.HostFailureError


def test_widen_and_approve(s):
    extra = {"version": 1, "filesystem": {"entries": [{"path": "/srv/data", "access": "write"}]}}
    widened = s.widen({"version": 1, "preset": "read-only"}, extra)
    entries = {e["path"]: e["access"] for e in widened["filesystem"]["entries"]}
    assert entries[":root"] == "read" and entries["/srv/data"] == "write"
    approval = s.approve(widened, {"version": 1, "filesystem": {"entries": [
        {"path": "/srv/data/sub", "access": "write"}]}})
    assert approval["recorded"] is True
    outside = s.approve(extra, {"version": 1, "filesystem": {"entries": [
        {"path": "/elsewhere", "access": "write"}]}})
    assert outside["recorded"] is False and outside["dropped"]


def test_context(s, workspace):
    text = s.context(WORKSPACE, cwd=workspace)
    assert isinstance(text, str) and workspace in text
    data = s.context(WORKSPACE, cwd=workspace, as_json=True)
    assert isinstance(data, dict)
    # The backend that will run it here (the one explain chooses), or labelled for any host.
    assert data["backend"] == s.explain(WORKSPACE, cwd=workspace)["available_backend"]
    anywhere = s.context(WORKSPACE, cwd=workspace, as_json=True, any_backend=True)
    assert anywhere["backend"] is None and "under Landlock" in anywhere["network"]["limits"][0]
    unsandboxed = s.context(WORKSPACE, cwd=workspace, as_json=True, preference="forbid")
    assert unsandboxed["sandboxed"] is False and unsandboxed["backend"] is None


def test_classify(s):
    denial = s.classify(1, 0, "sh: 1: cannot create /usr/x: Read-only file system\n", "bwrap")
    assert denial["likely_sandbox_denial"] is True and denial["kind"] == "filesystem"
    assert s.classify(1, 0, "Read-only file system\n", None)["likely_sandbox_denial"] is False
    assert s.classify(0, 0, b"", "bwrap")["likely_sandbox_denial"] is False


def test_backends(s):
    report = s.backends(probe=True)
    names = [b["name"] for b in report["backends"]]
    assert "bwrap" in names and "landlock" in names


def test_transform_resolves_argv0(s, workspace):
    plan = s.transform(FULL, ["true"], cwd=workspace)
    assert plan["backend"] is None and plan["argv"][0].endswith("/true")


def test_exec_unsandboxed_failure_is_not_a_denial(s, workspace):
    report = s.exec(FULL, ["sh", "-c", "echo 'oops' >&2; exit 3"], cwd=workspace,
                    flags=sbx.EXEC_CAPTURE_STDERR)
    assert report["exit"]["code"] == 3 and report["final"] == "none"
    assert report["stderr_tail"] == "oops\n"
    assert report["denial"]["likely_sandbox_denial"] is False


def test_exec_write_inside_passes(s, workspace, backend):
    report = s.exec(WORKSPACE, ["sh", "-c", "echo hello > inside.txt"], cwd=workspace)
    assert report["exit"]["code"] == 0 and report["final"] == backend
    with open(os.path.join(workspace, "inside.txt")) as f:
        assert f.read() == "hello\n"


def test_exec_write_outside_is_denied_and_classified(s, workspace, backend):
    # A directory this process can write (so only the sandbox can stop the write), outside the
    # workspace and outside /tmp and $TMPDIR (which workspace-write leaves writable):
    # $SBX_TEST_OUTSIDE_PARENT (ctest: next to the installed test tree), else the current
    # directory.
    parent = os.environ.get("SBX_TEST_OUTSIDE_PARENT") or os.getcwd()
    os.makedirs(parent, exist_ok=True)
    outside = tempfile.mkdtemp(prefix="sbx-pytest-outside-", dir=parent)
    target = os.path.join(os.path.realpath(outside), "denied.txt")
    try:
        report = s.exec(WORKSPACE, ["sh", "-c", f"echo x > '{target}'"], cwd=workspace,
                        flags=sbx.EXEC_CAPTURE_STDERR)
        assert report["exit"]["code"] != 0 and report["final"] == backend
        assert not os.path.exists(target)
        denial = report["denial"]
        assert denial["likely_sandbox_denial"] is True and denial["kind"] == "filesystem"
        assert target in report["stderr_tail"]
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_exec_runs_off_the_gil(s, workspace, backend):
    # While a sandboxed `sleep` runs in one thread, this thread keeps running Python.
    done = []
    thread = threading.Thread(target=lambda: done.append(
        s.exec(WORKSPACE, ["sleep", "1"], cwd=workspace)))
    thread.start()
    ticks = 0
    while thread.is_alive():
        ticks += 1
        thread.join(0.01)
    assert done and done[0]["exit"]["code"] == 0
    assert ticks > 10


class _Loopback:
    """An HTTP server on 127.0.0.1 answering "hello PATH", counting what reaches it."""

    def __init__(self):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                body = f"hello {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        # The serving thread blocks every signal: a backend may wait for its child's SIGCHLD in
        # the calling thread, and a thread with SIGCHLD unblocked would take it.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


FETCH = r"""
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener()
with open("out", "w") as out:
    for url in sys.argv[1:]:
        try:
            with opener.open(url, timeout=20) as reply:
                out.write(f"{reply.status} {reply.read().decode()}\n")
        except urllib.error.HTTPError as e:
            out.write(f"{e.code}\n")
        except Exception as e:
            out.write(f"failed {type(e).__name__}\n")
"""


def test_proxy_refuses_an_unlisted_host(s, workspace):
    allowed, unlisted = _Loopback(), _Loopback()
    try:
        policy = {"version": 1,
                  "filesystem": {"kind": "restricted", "protected_names": [], "entries": [
                      {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
                  "network": {"mode": "proxy", "allowed_domains": [f"127.0.0.1:{allowed.port}"]}}
        explained = s.explain(policy, cwd=workspace)
        if explained["final"] == "none":
            pytest.skip(f"{NO_BACKEND}none here runs network mode proxy: "
                        f"{explained['available_reason']}")
        report = s.exec(policy, [sys.executable, "-c", FETCH,
                                 f"http://127.0.0.1:{allowed.port}/ok",
                                 f"http://127.0.0.1:{unlisted.port}/no"], cwd=workspace)
        assert report["exit"]["code"] == 0, report
        with open(os.path.join(workspace, "out")) as f:
            lines = f.read().splitlines()
        assert lines == ["200 hello /ok", "403"]
        assert allowed.requests == ["/ok"] and unlisted.requests == []
        refusals = report["network_refusals"]
        assert [(r["host"], r["port"]) for r in refusals] == [("127.0.0.1", unlisted.port)]
    finally:
        allowed.close()
        unlisted.close()


def _wait_for(path):
    for _ in range(1000):
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def test_close_waits_for_a_call_running_in_another_thread(lib_path, workspace):
    # Freeing the manager under a running call was a heap use-after-free (issue #32): close()
    # returns only once the call has returned, and the call's report is whole.
    handle = sbx.Sbx(lib_path, backends="no-such-backend").open()
    started, finished = os.path.join(workspace, "started"), os.path.join(workspace, "finished")
    reports = []
    thread = threading.Thread(target=lambda: reports.append(handle.exec(
        FULL, ["sh", "-c", f"touch {started}; sleep 1; touch {finished}"], cwd=workspace)))
    thread.start()
    assert _wait_for(started), "the command never started"
    handle.close()
    assert os.path.exists(finished), "close() returned while the command was still running"
    thread.join()
    assert reports and reports[0]["exit"]["code"] == 0
    # The handle opens a new manager on its next call, as after any close().
    assert handle.explain(FULL, cwd=workspace)["should_sandbox"] is False
    handle.close()


def test_an_embedded_nul_is_an_error_never_a_truncation(s, workspace, lib_path):
    # ctypes would pass the bytes up to the NUL: "touch ran\0; ..." would run as "touch ran".
    marker = os.path.join(workspace, "ran")
    with pytest.raises(sbx.InvalidInputError, match=r"argv\[2\] contains a NUL character at index"):
        s.exec(FULL, ["sh", "-c", f"touch {marker}\0; echo checked-by-agent"], cwd=workspace)
    assert not os.path.exists(marker)
    with pytest.raises(ValueError, match=r"argv\[1\] contains a NUL"):
        s.transform(FULL, ["echo", "checked-by-agent\0; rm -rf ~"], cwd=workspace)
    with pytest.raises(ValueError, match="cwd contains a NUL"):
        s.exec(FULL, ["true"], cwd="/tmp/safe\0/../etc")
    with pytest.raises(ValueError, match="cwd contains a NUL"):
        s.context(WORKSPACE, cwd="/tmp/safe\0/../etc")
    with pytest.raises(ValueError, match="preference contains a NUL"):
        s.explain(WORKSPACE, cwd=workspace, preference="auto\0forbid")
    with pytest.raises(ValueError, match="policy contains a NUL"):
        s.should_sandbox('{"version":1,"preset":"read-only"}\0{"preset":"danger-full-access"}')
    with pytest.raises(ValueError, match="backend contains a NUL"):
        s.classify(1, 0, "x", backend="bwrap\0")
    with pytest.raises(ValueError, match="backends contains a NUL"):
        sbx.Sbx(lib_path, backends="bwrap\0,landlock").open()
    # A dict travels as JSON, the NUL escaped ("\u0000"): libsbx refuses it naming the entry.
    nul_path = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":root", "access": "read"},
        {"path": "/tmp/safe\0/../etc", "access": "write"}]}}
    with pytest.raises(sbx.SbxError,
                       match="/filesystem/entries/1/path: a string contains a NUL byte"):
        s.should_sandbox(nul_path)
    # classify's stderr is passed with its length: NUL bytes there are data, not an error.
    assert s.classify(1, 0, b"a\0b: Permission denied")["likely_sandbox_denial"] in (True, False)
