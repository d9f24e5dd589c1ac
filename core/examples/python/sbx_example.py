#!/usr/bin/env python3
"""Embedding sbx in a Python agent with the `sbx` package (bindings/python, over the C API).

    python3 sbx_example.py --prefix /usr/local        # an installed sbx
    python3 sbx_example.py --lib /path/to/libsbx.so.0.1

Walks through what an agent does: list the backends, ask the two questions, describe the
sandbox to the model, widen a policy for one command and record what a person approves, run
commands (and learn whether a failure was the sandbox's doing), and run one whose network goes
only through sbx's filtering proxy (network.mode proxy: an allowed host answers, an unlisted one
is refused and listed in the report). Every step checks its result,
so the script doubles as the C API's end-to-end test (ctest capi.python_example); it exits
non-zero on the first wrong answer.
"""
import argparse
import http.server
import os
import signal
import sys
import tempfile
import threading

try:
    import sbx as sbxlib  # the binding: bindings/python (pip install ./bindings/python)
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "bindings", "python", "src"))
    import sbx as sbxlib
from sbx import SbxError

SBX_EXEC_ALLOW_UNSANDBOXED = sbxlib.EXEC_ALLOW_UNSANDBOXED
SBX_EXEC_CAPTURE_STDERR = sbxlib.EXEC_CAPTURE_STDERR


# -- the walk-through -------------------------------------------------------------------------

def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        sys.exit(1)


def find_library(args):
    if args.lib:
        return args.lib
    try:
        return sbxlib.find_library(args.prefix or os.environ.get("SBX_PREFIX", "/usr/local"))
    except SbxError as e:
        sys.exit(f"{e}; pass --prefix or --lib")


WORKSPACE = {"version": 1, "preset": "workspace-write"}
DENY_SSH = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
    {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
    {"path": "~/.ssh", "access": "deny"}]}}
FULL = {"version": 1, "preset": "danger-full-access"}


def walk_through_pure_parts(sbx, workdir):
    check(sbx.version().count(".") == 2, f"sbx_version() = {sbx.version()}")

    decision = sbx.should_sandbox(WORKSPACE)
    check(decision["sandbox"] is True, f"workspace-write is sandboxed: {decision['reason']}")
    check(sbx.should_sandbox(FULL)["sandbox"] is False, "danger-full-access is not sandboxed")
    try:
        sbx.should_sandbox(DENY_SSH, "forbid")
        check(False, "forbid on a deny policy must be an error")
    except SbxError as e:
        check("deny" in str(e), f"forbid + deny entries refused: {e}")

    try:
        sbx.should_sandbox({"version": 1, "filesystem": {"kind": "nope"}})
        check(False, "an invalid policy must be an error")
    except SbxError as e:
        check("/filesystem/kind" in str(e), f"invalid policy names its JSON pointer: {e}")

    text = sbx.context(DENY_SSH, cwd=workdir)
    check("Writing is allowed only in:" in text and ".ssh" in text,
          "context (text) names writable roots and denied paths")
    structured = sbx.context(DENY_SSH, cwd=workdir, as_json=True)
    check(structured["filesystem"]["writable_roots"] == [workdir],
          "context (JSON) has the same facts")

    base = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]}}
    extra = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": "~/.cache", "access": "write"}]}, "network": {"mode": "enabled"}}
    wide = sbx.widen(base, extra)
    paths = [e.get("path") for e in wide["filesystem"]["entries"]]
    check(paths == [":root", ":cwd", "~/.cache"] and wide["network"]["mode"] == "enabled",
          "widen unites entries in order and enables the network")

    approval = sbx.approve(wide, {"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": "~/.cache/pip", "access": "write"}, {"path": "/etc", "access": "write"}]}})
    check(approval["recorded"] and approval["dropped"] ==
          ['"/etc" (write): narrowed to read, the request asked only to read it'],
          "approve keeps what lies inside the request and says what it narrowed")
    only_cwd = {"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":cwd", "access": "write"}]}}
    nothing = sbx.approve(only_cwd, {"version": 1, "filesystem": {"kind": "restricted",
                                                                  "entries": [
        {"path": "/opt/elsewhere", "access": "write"}]}})
    check(nothing["recorded"] is False and nothing["policy"] is None,
          "an approval outside the request records nothing (and is not a refusal)")

    verdict = sbx.classify(0, 31, "", "bwrap")
    check(verdict["likely_sandbox_denial"] and verdict["kind"] == "syscall_filter",
          "classify: death by SIGSYS under a sandbox is the syscall filter's")
    verdict = sbx.classify(159, 0, "", "bwrap")
    check(not verdict["likely_sandbox_denial"], "classify: a plain exit 159 is the command's own")
    verdict = sbx.classify(1, 0, "cat: x: Permission denied\n", None)
    check(not verdict["likely_sandbox_denial"], "classify: never a denial without a sandbox")


def walk_through_execution(sbx, workdir):
    listing = sbx.backends(probe=True)
    available = [b["name"] for b in listing["backends"] if b["available"]]
    print(f"     backends: loaded {[b['name'] for b in listing['backends']]}, "
          f"available {available}, rejected {len(listing['rejected'])}")

    explained = sbx.explain(WORKSPACE, cwd=workdir)
    check(explained["should_sandbox"] is True and
          (explained["final"] in available or explained["final"] == "none"),
          f"explain: final backend {explained['final']!r} ({explained['available_reason']})")

    plan = sbx.transform(FULL, ["true"], cwd=workdir)
    check(plan["backend"] is None and plan["argv"][0].endswith("/true"),
          "transform: an unsandboxed plan with argv[0] resolved from PATH")

    # An ordinary failure without a sandbox: reported, and classified as not a denial.
    report = sbx.exec(FULL, ["sh", "-c", "echo 'oops: no such thing' >&2; exit 3"], cwd=workdir,
                      flags=SBX_EXEC_CAPTURE_STDERR)
    check(report["exit"]["code"] == 3 and report["final"] == "none",
          "exec (unsandboxed): the command's own exit code")
    check(report["stderr_tail"] == "oops: no such thing\n" and
          report["denial"]["likely_sandbox_denial"] is False,
          "exec: stderr captured, ordinary failure not classified as a denial")

    if not available:
        # No backend here: the deny policy is refused even with the override.
        report = sbx.exec(DENY_SSH, ["true"], cwd=workdir, flags=SBX_EXEC_ALLOW_UNSANDBOXED)
        check(report["exit"] is None and "deny" in report["error"],
              "exec: a deny policy never runs unsandboxed, even with ALLOW_UNSANDBOXED")
        print("skip sandboxed runs: no backend is available on this host")
        return

    report = sbx.exec(WORKSPACE, ["sh", "-c", "echo hello > made-inside.txt"], cwd=workdir)
    check(report["exit"]["code"] == 0 and report["final"] in available and
          os.path.exists(os.path.join(workdir, "made-inside.txt")),
          f"exec (sandboxed by {report['final']}): writing inside the workspace works")

    report = sbx.exec(WORKSPACE, ["sh", "-c", "echo x > /usr/sbx-python-example-denied"],
                      cwd=workdir, flags=SBX_EXEC_CAPTURE_STDERR)
    denial = report["denial"]
    check(report["exit"]["code"] != 0 and denial["likely_sandbox_denial"] and
          denial["kind"] == "filesystem" and "Read-only file system" in denial["evidence"] and
          "/usr/sbx-python-example-denied" in report["stderr_tail"] and
          not os.path.exists("/usr/sbx-python-example-denied"),
          f"exec: a write outside the workspace is denied and classified ({denial['evidence']})")


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a "host" for the proxy rules) that answers "hello PATH" and
    counts the requests that reach it."""

    def __init__(self):
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = f"hello {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        # The serving thread blocks every signal. Why: a sandbox backend may wait for its
        # child's SIGCHLD in the calling thread (bwrap: a signalfd); a thread of this process
        # that left SIGCHLD unblocked would take that process-directed signal and drop it.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
            self.thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# Runs inside the sandbox: each URL through the proxy the environment names (sbx sets
# HTTP_PROXY), then the first one directly (no proxy), writing one line per attempt to `out`.
FETCH = r"""
import sys, urllib.error, urllib.request
def fetch(opener, url):
    try:
        with opener.open(url, timeout=20) as reply:
            return f"{reply.status} {reply.read().decode()}"
    except urllib.error.HTTPError as e:
        return f"{e.code}"
    except Exception as e:
        return f"failed {type(e).__name__}"
proxied = urllib.request.build_opener()
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with open("out", "w") as out:
    for url in sys.argv[1:]:
        out.write(f"proxied {fetch(proxied, url)}\n")
    out.write(f"direct {fetch(direct, sys.argv[1])}\n")
"""


def walk_through_proxy(sbx, workdir):
    allowed, unlisted = LoopbackServer(), LoopbackServer()
    try:
        # network.mode proxy: only 127.0.0.1:<allowed port>, through sbx's own proxy, which
        # libsbx starts for the run and stops when the command has exited. protected_names []
        # lets the landlock backend express the filesystem part too.
        policy = {"version": 1,
                  "filesystem": {"kind": "restricted", "protected_names": [], "entries": [
                      {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
                  "network": {"mode": "proxy",
                              "allowed_domains": [f"127.0.0.1:{allowed.port}"]}}
        explained = sbx.explain(policy, cwd=workdir)
        if explained["final"] == "none":
            print(f"skip network mode proxy: no backend here can run it "
                  f"({explained['available_reason']})")
            return
        plan = sbx.transform(policy, [sys.executable, "-c", FETCH], cwd=workdir)
        # bwrap hands the environment to its stage 2 through argv, others keep it in "env".
        check(any(e.startswith("HTTP_PROXY=") and "sbx:***@" in e
                  for e in plan["env"] + plan["argv"]),
              "transform (proxy): the plan points at sbx's proxy, credential shown as ***")
        report = sbx.exec(policy, [sys.executable, "-c", FETCH, allowed.url("/via-proxy"),
                                   unlisted.url("/unlisted")], cwd=workdir)
        check(report["exit"] is not None and report["exit"]["code"] == 0 and
              report["final"] == explained["final"],
              f"exec (proxy, {report['final']}): the command ran: {report['error']}")
        with open(os.path.join(workdir, "out")) as f:
            lines = f.read().splitlines()
        check(lines[:1] == ["proxied 200 hello /via-proxy"] and allowed.requests == ["/via-proxy"],
              f"exec (proxy): the allowed host answers through sbx's proxy: {lines}")
        check(lines[1:2] == ["proxied 403"] and unlisted.requests == [],
              f"exec (proxy): the unlisted host is refused and never reached: {lines}")
        check(lines[2:3] != [] and lines[2].startswith("direct failed") and
              allowed.requests == ["/via-proxy"],
              f"exec (proxy): a direct connection around the proxy fails: {lines}")
        refusals = report["network_refusals"]
        check(len(refusals) == 1 and refusals[0]["port"] == unlisted.port and
              refusals[0]["host"] == "127.0.0.1" and
              refusals[0]["rule"] == "not in allowed_domains" and
              report["network_refusals_total"] == 1,
              f"exec (proxy): the report lists the refused host: {refusals}")
    finally:
        allowed.close()
        unlisted.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prefix", help="installation prefix holding lib/libsbx.so*")
    parser.add_argument("--lib", help="path of libsbx.so* itself")
    parser.add_argument("--backends", help="preference order, e.g. bwrap,landlock")
    args = parser.parse_args()
    library = find_library(args)
    print(f"     libsbx: {library}")
    sbx = sbxlib.Sbx(library, backends=args.backends)
    # A fresh workspace (the policy's :cwd) so the example never writes into the caller's.
    with tempfile.TemporaryDirectory(prefix="sbx-python-example-", dir="/tmp") as tmp:
        workdir = os.path.realpath(tmp)
        walk_through_pure_parts(sbx, workdir)
        sbx.open()
        try:
            walk_through_execution(sbx, workdir)
            walk_through_proxy(sbx, workdir)
        finally:
            sbx.close()
    print("all checks passed")


if __name__ == "__main__":
    main()
