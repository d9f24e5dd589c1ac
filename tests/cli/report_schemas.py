"""The JSON Schemas of sbx's reports (core/schema/*.schema.json), for the CLI tests.

check(name, document) validates a report against core/schema/NAME.schema.json of the source
tree and raises AssertionError naming every violation. check_run(args, result) is the hook
cli_test.py's sbx() calls after each run: it finds the JSON reports that command line writes
(`exec --json`'s last stderr line, the --dry-run plan, `explain|backends|context --json`,
`cache list --json`, `backends --verify NAME --json`,
`debug`'s plan) and checks each, so every report the CLI tests produce is validated.
"""
import functools
import json
import os

import jsonschema  # python3-jsonschema (cmake/scripts/bootstrap-debian.sh)

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "schema")
REPORTS = ["exec", "explain", "backends", "plan", "context", "denial", "decision", "cache",
           "verify"]
GLOBAL_OPTIONS_WITH_VALUE = {"--backends", "--plugin-dir", "--log-level", "--log-format"}


@functools.lru_cache(maxsize=None)
def schema(name):
    with open(os.path.join(SCHEMA_DIR, name + ".schema.json"), encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def validator(name):
    return jsonschema.Draft202012Validator(schema(name))


def violations(name, document):
    return [f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in validator(name).iter_errors(document)]


def check(name, document, where=""):
    found = violations(name, document)
    if found:
        raise AssertionError(f"a report does not follow core/schema/{name}.schema.json"
                             f"{' (' + where + ')' if where else ''}:\n  " + "\n  ".join(found)
                             + "\n" + json.dumps(document)[:4000])
    return document


def verb_and_options(args):
    """The subcommand of an sbx command line and the arguments of it before `--`."""
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return None, []
        if not arg.startswith("-"):
            rest = args[i + 1:]
            return arg, rest[:rest.index("--")] if "--" in rest else rest
        i += 2 if arg in GLOBAL_OPTIONS_WITH_VALUE else 1
    return None, []


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def check_run(args, result):
    """Validates the reports in a finished run's output (a CompletedProcess with text)."""
    verb, options = verb_and_options(args)
    if "--help" in options or "-h" in options:
        return
    where = " ".join(str(a) for a in args)[:300]
    if verb == "exec":
        if "--json" in options:
            line = last_line(result.stderr)
            # The report follows whatever the command left on its last stderr line.
            start = line.find('{"should_sandbox"')
            # CLI11 refusing the command line (exit 125 before any run) writes no report: its
            # message, or a misspelling's followed by the verb's usage line.
            if start >= 0:
                check("exec", json.loads(line[start:]), where)
            elif not line.startswith(("sbx: bad usage", "Usage: sbx")):
                raise AssertionError(f"`sbx {where}` wrote no exec report:\n{result.stderr}")
        if "--dry-run" in options and result.returncode == 0:
            check("plan", json.loads(result.stdout), where)
    elif verb == "debug" and result.returncode == 0:
        check("plan", json.loads(result.stdout), where)
    elif verb == "backends" and "--verify" in options and "--json" in options:
        # The kit's report: written whether the backend passed (0) or not (1).
        if result.returncode in (0, 1):
            check("verify", json.loads(result.stdout), where)
    elif verb in ("explain", "backends", "context") and "--json" in options \
            and result.returncode == 0:
        check(verb, json.loads(result.stdout), where)
    elif verb == "cache" and options[:1] == ["list"] and "--json" in options \
            and result.returncode == 0:
        check("cache", json.loads(result.stdout), where)
