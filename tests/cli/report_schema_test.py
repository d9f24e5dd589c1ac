#!/usr/bin/env python3
"""The JSON Schemas of sbx's reports (core/schema/, `sbx schema NAME`), end to end.

  Schemas          each is a valid draft 2020-12 schema, installed and printed byte for byte as
                   in the source, closed wherever the output is (additionalProperties false)
  Reports          representative runs of the installed sbx (a denial, the network refusals of
                   restricted mode, a signal death, refused and failed runs, explain, probe,
                   context, a plan) and the C API's reports through the Python binding: each
                   validates, and a report with an unknown or a missing key does not
  GeneratedTypes   bindings/node/reports.d.ts and bindings/python/src/sbx/reports.py are what
                   cmake/scripts/gen_report_types.py makes of the schemas now, and the Python
                   TypedDicts have exactly the schema's keys (required ones required)

Environment: SBX_BIN (the installed sbx), SBX_SHARE (its share directory), SBX_PREFIX (its
prefix, for libsbx), SBX_SOURCE_DIR. Every report cli_test.py's runs produce is validated too
(its sbx() hook, tests/cli/report_schemas.py).
"""
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import typing
import unittest

import jsonschema  # python3-jsonschema (cmake/scripts/bootstrap-debian.sh)

import report_schemas
from ctest_main import main, skip_no_backend

SBX = os.environ.get("SBX_BIN", "")
SHARE = os.environ.get("SBX_SHARE", "")
PREFIX = os.environ.get("SBX_PREFIX", "")
SOURCE = os.environ.get("SBX_SOURCE_DIR", "")
TIMEOUT = 60
ALL_SCHEMAS = ["policy"] + report_schemas.REPORTS


def run(*args, cwd=None):
    result = subprocess.run([SBX, *args], cwd=cwd, capture_output=True, text=True,
                            errors="replace", timeout=TIMEOUT, check=False)
    return result


def shown(result):
    return f"\nargs: {result.args}\nexit: {result.returncode}\nstdout:\n{result.stdout}\n" \
           f"stderr:\n{result.stderr}"


def exec_report(result):
    line = report_schemas.last_line(result.stderr)
    return json.loads(line[line.index('{"should_sandbox"'):])


def available_backends():
    result = run("backends", "--probe", "--json")
    if result.returncode != 0:
        raise AssertionError("sbx backends --probe --json failed" + shown(result))
    return {b["name"] for b in json.loads(result.stdout)["backends"] if b["available"]}


def object_schemas(node, where="#"):
    """Every subschema with "type": "object" (or "properties"), with its location."""
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from object_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from object_schemas(value, f"{where}/{i}")


class Schemas(unittest.TestCase):
    def test_installed_printed_and_source_are_the_same_valid_2020_12_schema(self):
        for name in ALL_SCHEMAS:
            with self.subTest(schema=name):
                with open(os.path.join(SOURCE, "core", "schema", name + ".schema.json"),
                          encoding="utf-8") as f:
                    source = f.read()
                with open(os.path.join(SHARE, "sbx", name + ".schema.json"),
                          encoding="utf-8") as f:
                    self.assertEqual(f.read(), source, "installed")
                printed = run("schema", name)
                self.assertEqual(printed.returncode, 0, shown(printed))
                self.assertEqual(printed.stdout, source, "printed by `sbx schema`")
                schema = json.loads(source)
                self.assertEqual(schema["$schema"], "https://json-schema.org/draft/2020-12/schema")
                jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(run("policy", "schema").stdout, run("schema", "policy").stdout)

    def test_every_report_object_is_closed(self):
        # The output of report_json.cpp, denial.cpp and context.cpp is closed: a key sbx adds
        # must be added to the schema (and so to the generated types) in the same change.
        for name in report_schemas.REPORTS:
            for where, node in object_schemas(report_schemas.schema(name)):
                with self.subTest(schema=name, at=where):
                    self.assertIs(node.get("additionalProperties"), False)
                    self.assertEqual(node.get("type"), "object")

    def test_an_unknown_name_is_refused_and_help_lists_every_schema(self):
        refused = run("schema", "nonexistent")
        self.assertEqual(refused.returncode, 2, shown(refused))
        self.assertRegex(refused.stderr.splitlines()[0], r"^sbx: .+; .+")
        helped = run("schema", "--help")
        self.assertEqual(helped.returncode, 0, shown(helped))
        for name in ALL_SCHEMAS:
            self.assertRegex(helped.stdout, rf"\n  {name} ", name)
        self.assertIn("schema", run("--help").stdout)


class Reports(unittest.TestCase):
    def setUp(self):
        self.assertTrue(SBX and os.access(SBX, os.X_OK), f"SBX_BIN: {SBX!r}")
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="sbx-schema-test-"))
        self.addCleanup(shutil.rmtree, self.work, ignore_errors=True)

    def backend(self):
        for name in ("bwrap", "landlock"):
            if name in available_backends():
                return name
        skip_no_backend(self, "neither bwrap nor landlock is available here")
        return ""

    def exec_json(self, *args, code=None):
        result = run(*args[:args.index("exec") + 1], "--json", "--cwd", self.work,
                     *args[args.index("exec") + 1:])
        if code is not None:
            self.assertEqual(result.returncode, code, shown(result))
        return report_schemas.check("exec", exec_report(result), " ".join(args))

    def assert_rejected(self, name, report):
        """An unknown key, and each missing required key, make the report invalid."""
        extra = copy.deepcopy(report)
        extra["unknown_key"] = 1
        self.assertTrue(report_schemas.violations(name, extra), "an unknown key validated")
        root = report_schemas.schema(name)
        definition = root["$defs"][root["$ref"].rsplit("/", 1)[-1]]
        variants = [root["$defs"][v["$ref"].rsplit("/", 1)[-1]]
                    for v in definition.get("oneOf", [])] or [definition]
        # The keys every variant requires (Denial: a likely denial or none).
        required = set.intersection(*(set(v.get("required", [])) for v in variants))
        self.assertTrue(required)
        for key in required:
            missing = copy.deepcopy(report)
            del missing[key]
            self.assertTrue(report_schemas.violations(name, missing), f"without {key}")

    def test_a_filesystem_denial(self):
        backend = self.backend()
        report = self.exec_json("--backends", backend, "exec", "--preset", "read-only", "--",
                                "/bin/sh", "-c", f"echo x > {self.work}/x")
        self.assertIsNotNone(report["exit"])
        self.assertTrue(report["denial"]["likely_sandbox_denial"], report)
        self.assertIsInstance(report["denial"]["evidence"], str)
        self.assert_rejected("exec", report)
        # The nested objects are closed too.
        bad = copy.deepcopy(report)
        bad["denial"]["unknown_key"] = True
        self.assertTrue(report_schemas.violations("exec", bad))
        bad = copy.deepcopy(report)
        bad["exit"]["unknown_key"] = 0
        self.assertTrue(report_schemas.violations("exec", bad))

    def test_success_and_an_ordinary_failure_have_no_evidence(self):
        self.backend()
        report = self.exec_json("exec", "--", "/bin/true", code=0)
        self.assertEqual(report["denial"]["evidence"], None)
        self.assertEqual(report["exit"], {"code": 0, "signal": None, "shell_code": 0})
        report = self.exec_json("exec", "--", "/bin/sh", "-c", "exit 3", code=3)
        self.assertEqual((report["denial"]["kind"], report["denial"]["evidence"]), ("none", None))

    def test_a_signal_death(self):
        # Run directly and in a sandbox alike (bwrap's direct launch too, through its waiter:
        # plugins/bwrap/README.md), the report names the signal.
        report = self.exec_json("exec", "--preset", "danger-full-access", "--", "/bin/sh", "-c",
                                "kill -TERM $$", code=143)
        self.assertEqual(report["exit"], {"code": None, "signal": 15, "shell_code": 143}, report)
        self.assertEqual(report["final"], "none")
        self.backend()
        report = self.exec_json("exec", "--", "/bin/sh", "-c", "kill -TERM $$", code=143)
        self.assertEqual(report["exit"], {"code": None, "signal": 15, "shell_code": 143}, report)

    def test_network_refusals_of_restricted_mode(self):
        if "bwrap" not in available_backends():
            self.skipTest("bwrap is not available here: only its sandbox reports the refusals "
                          "of restricted mode (unix sockets, addresses)")
        sockets = tempfile.mkdtemp(prefix="sbx-schema-sock-")
        self.addCleanup(shutil.rmtree, sockets, ignore_errors=True)
        path = os.path.join(sockets, "docker.sock")
        listener = socket.socket(socket.AF_UNIX)
        self.addCleanup(listener.close)
        listener.bind(path)
        listener.listen(1)
        script = ("import socket\n"
                  f"for family, where in ((socket.AF_UNIX, {path!r}), "
                  "(socket.AF_INET, ('192.0.2.7', 8443))):\n"
                  "    s = socket.socket(family)\n"
                  "    try:\n"
                  "        s.connect(where); print('REACHED')\n"
                  "    except OSError as e:\n"
                  "        print(e.errno)\n")
        report = self.exec_json("--backends", "bwrap", "exec", "--", "/usr/bin/python3", "-c",
                                script, code=0)
        kinds = [refusal["kind"] for refusal in report["network_refusals"]]
        self.assertEqual(kinds, ["unix", "ip"], report)
        self.assertEqual(report["network_refusals"][0], {"kind": "unix", "path": path})
        self.assertEqual(report["network_refusals"][1], {"kind": "ip", "address": "192.0.2.7:8443"})
        for refusal in report["network_refusals"]:
            self.assertNotIn("host", refusal)  # what index.d.ts once promised
        bad = copy.deepcopy(report)
        bad["network_refusals"][0]["host"] = "x"
        self.assertTrue(report_schemas.violations("exec", bad))

    def test_a_proxy_refusal(self):
        if "bwrap" not in available_backends() or not shutil.which("curl"):
            self.skipTest("needs bwrap (network mode proxy) and curl")
        report = self.exec_json("--backends", "bwrap", "exec", "--network", "proxy", "--",
                                shutil.which("curl"), "-s", "-o", "/dev/null",
                                "http://example.invalid/")
        refusals = report["network_refusals"]
        self.assertEqual([r["kind"] for r in refusals], ["proxy"], report)
        self.assertEqual((refusals[0]["host"], refusals[0]["port"]), ("example.invalid", 80))

    def test_refused_and_failed_runs(self):
        refused = self.exec_json("--backends", "nonexistent", "exec", "--sandbox", "require",
                                 "--", "/bin/true", code=125)
        self.assertIsNone(refused["exit"])
        self.assertIsNone(refused["denial"])
        self.assertIsInstance(refused["error"], str)
        not_found = self.exec_json("exec", "--", "/nonexistent/program", code=127)
        self.assertIsNone(not_found["exit"])
        bad_policy = self.exec_json("exec", "--policy", "/nonexistent.json", "--", "/bin/true",
                                    code=125)
        self.assertIsNone(bad_policy["should_sandbox"])
        self.assert_rejected("exec", bad_policy)

    def test_explain_probe_context_and_plans(self):
        for args, name in [
                (["explain", "--json"], "explain"),
                (["explain", "--json", "--sandbox", "forbid", "--deny", "*.pem"], "explain"),
                (["--backends", "nonexistent", "explain", "--json"], "explain"),
                (["backends", "--json"], "backends"),
                (["backends", "--probe", "--json"], "backends"),
                (["context", "--json"], "context"),
                (["context", "--json", "--preset", "read-only", "--network", "proxy"], "context"),
                (["exec", "--dry-run", "--", "/bin/true"], "plan"),
                (["debug", "windows", "--network", "enabled", "--", "/bin/ls"], "plan")]:
            with self.subTest(args=args):
                result = run(*args, cwd=self.work)
                self.assertEqual(result.returncode, 0, shown(result))
                report = report_schemas.check(name, json.loads(result.stdout), " ".join(args))
                self.assert_rejected(name, report)
        probed = json.loads(run("backends", "--probe", "--json").stdout)
        self.assertIn("cgroups", probed)
        bad = copy.deepcopy(probed)
        bad["backends"][0]["checks"].append({"name": "x", "status": "pass", "observed": ""})
        self.assertTrue(report_schemas.violations("backends", bad), "a check without remedy")

    def test_the_c_api_reports_through_the_python_binding(self):
        # sbx_exec's report has "stderr_tail"; sbx_classify_failure, sbx_should_sandbox,
        # sbx_transform, sbx_explain, sbx_backends_json and sbx_context have their own shapes.
        self.backend()
        sys.path.insert(0, os.path.join(SOURCE, "bindings", "python", "src"))
        import sbx as binding  # noqa: E402 (the source tree's, over the installed libsbx)
        with binding.Sbx(library=binding.find_library(PREFIX)) as s:
            report = s.exec({"version": 1, "preset": "workspace-write"},
                            ["/bin/sh", "-c", "echo oops >&2; exit 1"], cwd=self.work,
                            flags=binding.EXEC_CAPTURE_STDERR)
            report_schemas.check("exec", report, "sbx_exec")
            self.assertEqual(report["stderr_tail"], "oops\n")
            report_schemas.check("exec", s.exec({"version": 1, "preset": "read-only"},
                                                ["/bin/true"], cwd=self.work), "sbx_exec")
            # sbx_run_wait's: with "stdout_capture"/"stderr_capture", and a time-out's.
            ran = s.run({"version": 1, "preset": "workspace-write"},
                        ["/bin/sh", "-c", "echo out; echo e >&2"], cwd=self.work,
                        max_output_bytes=2)
            report_schemas.check("exec", ran.report, "sbx_run_wait")
            self.assertEqual((ran.stdout, ran.report["stdout_capture"]["truncated"]),
                             (b"ou", True))
            ended = s.run({"version": 1, "preset": "workspace-write"}, ["sleep", "30"],
                          cwd=self.work, timeout=0.5)
            report_schemas.check("exec", ended.report, "sbx_run_wait")
            self.assertEqual(ended.report["error_kind"], "timed_out")
            for name, document in [
                    ("denial", s.classify(1, 0, b"x: Read-only file system\n", "bwrap")),
                    ("denial", s.classify(0)),
                    ("decision", s.should_sandbox({"version": 1, "preset": "read-only"})),
                    ("plan", s.transform({"version": 1, "preset": "read-only"}, ["/bin/true"],
                                         cwd=self.work)),
                    ("explain", s.explain({"version": 1, "preset": "read-only"}, cwd=self.work)),
                    ("backends", s.backends(probe=True)),
                    ("backends", s.backends(probe=False)),
                    ("context", s.context({"version": 1, "preset": "workspace-write"},
                                          cwd=self.work, as_json=True))]:
                with self.subTest(report=name):
                    report_schemas.check(name, document, "C API")
                    self.assert_rejected(name, document)


class GeneratedTypes(unittest.TestCase):
    def test_the_generated_files_are_fresh(self):
        result = subprocess.run([sys.executable,
                                 os.path.join(SOURCE, "cmake", "scripts", "gen_report_types.py"),
                                 "--source", SOURCE, "--check"],
                                capture_output=True, text=True, timeout=TIMEOUT, check=False)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_the_typeddicts_have_exactly_the_schemas_keys(self):
        sys.path.insert(0, os.path.join(SOURCE, "bindings", "python", "src"))
        from sbx import reports  # noqa: E402
        checked = 0
        for name in report_schemas.REPORTS:
            for key, definition in report_schemas.schema(name)["$defs"].items():
                if definition.get("type") != "object":
                    continue
                typed = getattr(reports, key)
                with self.subTest(schema=name, type=key):
                    self.assertEqual(set(typing.get_type_hints(typed)),
                                     set(definition["properties"]))
                    self.assertEqual(set(typed.__required_keys__),
                                     set(definition.get("required", [])))
                    checked += 1
        self.assertGreaterEqual(checked, 25)
        # The two types that were wrong by hand: evidence may be None, refusals are a union.
        self.assertIs(typing.get_type_hints(reports.NoDenial)["evidence"], type(None))
        self.assertIs(typing.get_type_hints(reports.LikelyDenial)["evidence"], str)
        self.assertEqual({t.__forward_arg__ for t in typing.get_args(reports.NetworkRefusal)},
                         {"ProxyRefusal", "UnixRefusal", "IpRefusal"})

    def test_the_typescript_declares_every_type(self):
        with open(os.path.join(SOURCE, "bindings", "node", "reports.d.ts"), encoding="utf-8") as f:
            text = f.read()
        for name in report_schemas.REPORTS:
            for key, definition in report_schemas.schema(name)["$defs"].items():
                keyword = "interface" if definition.get("type") == "object" else "type"
                self.assertIn(f"export {keyword} {key} ", text, key)
        self.assertIn("evidence: null;", text)
        self.assertIn("export type NetworkRefusal = ProxyRefusal | UnixRefusal | IpRefusal;", text)
        with open(os.path.join(SOURCE, "bindings", "node", "index.d.ts"), encoding="utf-8") as f:
            self.assertIn("export * from './reports';", f.read())


if __name__ == "__main__":
    main()
