#!/usr/bin/env python3
"""End-to-end tests of the CLI's extras (core/cli/extras.cmake), on the installed sbx:

  PolicySchema   the JSON Schema (`sbx policy schema`, share/sbx/policy.schema.json) against the
                 strict parser: every golden and example policy validates with both, a corpus of
                 invalid policies is refused by both, a corpus of valid ones accepted by both.
  CliDocs        the man pages and completions are what the installed sbx's own definitions
                 generate; `man -l` renders each without a warning; bash, zsh and fish load the
                 completions and complete a verb.
  PolicyImport   `sbx policy import --from codex|srt` on real configuration files
                 (tests/cli/fixtures/import).

Environment (set by tests/cli/CMakeLists.txt): SBX_BIN, SBX_SHARE (the installed share dir),
SBX_SOURCE_DIR, SBX_VERSION.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import jsonschema  # python3-jsonschema (cmake/scripts/bootstrap-debian.sh)

from ctest_main import main

SBX = os.environ.get("SBX_BIN", "")
SHARE = os.environ.get("SBX_SHARE", "")
SOURCE = os.environ.get("SBX_SOURCE_DIR", "")
VERSION = os.environ.get("SBX_VERSION", "")
TIMEOUT = 60
FIXTURES = os.path.join(SOURCE, "tests", "cli", "fixtures", "import")



def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, check=False,
                          **kwargs)


def shown(result):
    return (f"\nargs: {result.args}\nexit: {result.returncode}\nstdout:\n{result.stdout}"
            f"\nstderr:\n{result.stderr}")


def walk(app, path=()):
    """(path, app) for `sbx __describe-cli`'s app and every subcommand below it."""
    path = path + (app["name"],)
    yield path, app
    for sub in app["subcommands"]:
        yield from walk(sub, path)


def private_parent():
    """Where a scratch HOME goes: outside shared directories such as /tmp, where sbx keeps no
    state and no toolchain caches (a policy with ":caches" cannot be resolved with its HOME
    there). Root: /srv/sbx-cli-tests (as cli_test.py); another user: ~/.sbx-test-homes."""
    if os.geteuid() == 0 and os.path.isdir("/srv"):
        base = "/srv/sbx-cli-tests"
        os.makedirs(base, mode=0o755, exist_ok=True)
    else:
        base = os.path.join(os.path.expanduser("~"), ".sbx-test-homes")
        os.makedirs(base, mode=0o700, exist_ok=True)
    return base


class ExtrasCase(unittest.TestCase):
    def setUp(self):
        self.assertTrue(SBX and os.access(SBX, os.X_OK), f"SBX_BIN must name sbx, got {SBX!r}")
        self.assertTrue(SHARE and SOURCE and VERSION, "SBX_SHARE, SBX_SOURCE_DIR, SBX_VERSION")
        self.tmp = tempfile.mkdtemp(prefix="sbx-extras-test-", dir=private_parent())
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        # No user or project settings may change what `policy check` accepts.
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.tmp,
                    "XDG_CONFIG_HOME": os.path.join(self.tmp, "config"), "LANG": "C.UTF-8"}

    def sbx(self, *args):
        return run([SBX, *args], env=self.env, cwd=self.tmp)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def parser_verdict(self, text, name="policy.json"):
        """Exit status of `sbx policy check` on the document (0 valid, 2 invalid)."""
        return self.sbx("policy", "check", "--cwd", self.tmp, "--policy", self.write(name, text))


# ---- the schema ----

# Goldens of `sbx context` for a policy every run refuses: refused by the schema and by
# `policy check` (test_refused_goldens_are_refused_by_both).
REFUSED_GOLDENS = {"tests/golden/context/19-proxy-policy-ports.input.json"}


def golden_policies():
    """(where, document) for every `sbx context` golden's policy."""
    found = []
    for path in sorted(glob.glob(os.path.join(SOURCE, "tests/golden/context/*.input.json"))):
        with open(path, encoding="utf-8") as f:
            found.append((os.path.relpath(path, SOURCE), json.load(f)["policy"]))
    return found


def example_policies():
    """(where, document) for every golden and documented example policy in the repository
    that a run accepts."""
    found = [(where, policy) for where, policy in golden_policies()
             if where not in REFUSED_GOLDENS]
    docs = ["README.md", "core/cli/README.md", "sdk/examples/firejail/README.md",
            "core/examples/python/README.md"]
    for doc in docs:
        path = os.path.join(SOURCE, doc)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            for candidate in json_documents(block):
                if isinstance(candidate, dict) and isinstance(candidate.get("policy"), dict):
                    candidate = candidate["policy"]
                if isinstance(candidate, dict) and candidate.get("version") == 1:
                    found.append((doc, candidate))
    return found


def json_documents(block):
    """Every JSON object in a fenced block: the whole block, a here-document, or one after
    `$ cat NAME` or a `$ sbx policy show` line. `$ cat bad*.json` (a documented invalid policy)
    is left out."""
    try:
        yield json.loads(block)
        return
    except ValueError:
        pass
    for heredoc in re.findall(r"<<'?(\w+)'?\n(.*?)\n\1$", block, flags=re.S | re.M):
        try:
            yield json.loads(heredoc[1])
        except ValueError:
            pass
    parts = re.split(r"^\$ (.*)$", block, flags=re.M)
    for command, body in zip(parts[1::2], parts[2::2]):
        if "bad" in command or not (command.startswith("cat ") or "policy show" in command):
            continue
        try:
            yield json.loads(body)
        except ValueError:
            pass


P = '{"version": 1, %s}'
FS = '{"version": 1, "filesystem": {"kind": "restricted", "entries": [%s]}}'
NET = '{"version": 1, "network": %s}'

# Refused by both the schema and the strict parser.
INVALID = [
    ("not an object", '[1]'),
    ("no version", '{"preset": "read-only"}'),
    ("version 2", '{"version": 2}'),
    ("version as a string", '{"version": "1"}'),
    ("version true", '{"version": true}'),
    ("unknown top-level key", P % '"sandbox": "auto"'),
    ("unknown preset", P % '"preset": "full"'),
    ("preset not a string", P % '"preset": 1'),
    ("preset with filesystem", P % '"preset": "read-only", "filesystem": {}'),
    ("preset with network", P % '"preset": "read-only", "network": {}'),
    ("writable_roots without preset", P % '"writable_roots": ["/a"]'),
    ("network_access without preset", P % '"network_access": true'),
    ("read-only with writable_roots", P % '"preset": "read-only", "writable_roots": ["/a"]'),
    ("read-only with exclude_slash_tmp", P % '"preset": "read-only", "exclude_slash_tmp": true'),
    ("danger-full-access with network_access",
     P % '"preset": "danger-full-access", "network_access": false'),
    ("external-sandbox with exclude_tmpdir_env_var",
     P % '"preset": "external-sandbox", "exclude_tmpdir_env_var": true'),
    ("relative writable root", P % '"preset": "workspace-write", "writable_roots": ["src"]'),
    (":minimal writable root", P % '"preset": "workspace-write", "writable_roots": [":minimal"]'),
    ("network_access not a bool", P % '"preset": "read-only", "network_access": "yes"'),
    ("filesystem not an object", P % '"filesystem": []'),
    ("unknown filesystem kind", P % '"filesystem": {"kind": "open"}'),
    ("unknown filesystem key", P % '"filesystem": {"mounts": []}'),
    ("entries on an unrestricted filesystem",
     P % '"filesystem": {"kind": "unrestricted", "entries": [{"path": "/", "access": "read"}]}'),
    ("entry access rw", FS % '{"path": ":root", "access": "rw"}'),
    ("entry without access", FS % '{"path": ":root"}'),
    ("entry with path and glob", FS % '{"path": "/a", "glob": "*.pem", "access": "deny"}'),
    ("entry with neither", FS % '{"access": "read"}'),
    ("unknown entry key", FS % '{"path": "/a", "access": "read", "mode": 1}'),
    ("empty path", FS % '{"path": "", "access": "read"}'),
    ("relative path", FS % '{"path": "src", "access": "write"}'),
    ("dot-dot component", FS % '{"path": "/a/../b", "access": "read"}'),
    ("dot component", FS % '{"path": "/a/./b", "access": "read"}'),
    ("trailing dot-dot", FS % '{"path": "~/..", "access": "read"}'),
    ("~user path", FS % '{"path": "~root/x", "access": "read"}'),
    ("unknown special path", FS % '{"path": ":home", "access": "read"}'),
    ("special path prefix", FS % '{"path": ":cwdx", "access": "read"}'),
    ("subpath of :root", FS % '{"path": ":root/etc", "access": "read"}'),
    (":cwd subpath with dot-dot", FS % '{"path": ":cwd/../x", "access": "write"}'),
    (":minimal writable", FS % '{"path": ":minimal", "access": "write"}'),
    (":caches read", FS % '{"path": ":caches", "access": "read"}'),
    (":caches denied", FS % '{"path": ":caches", "access": "deny"}'),
    ("subpath of :caches", FS % '{"path": ":caches/npm", "access": "write"}'),
    ("glob with a :caches component", FS % '{"glob": "~/:caches/x", "access": "deny"}'),
    ("glob granting read", FS % '{"glob": "**/*.pem", "access": "read"}'),
    ("empty glob", FS % '{"glob": "", "access": "deny"}'),
    ("glob of /", FS % '{"glob": "//", "access": "deny"}'),
    ("glob of ~", FS % '{"glob": "~/", "access": "deny"}'),
    ("glob ~user", FS % '{"glob": "~x/*.pem", "access": "deny"}'),
    ("glob with dot-dot", FS % '{"glob": "../*.pem", "access": "deny"}'),
    ("glob unclosed bracket", FS % '{"glob": "*.[ch", "access": "deny"}'),
    ("glob stray bracket", FS % '{"glob": "*.c]", "access": "deny"}'),
    ("glob lone backslash", FS % '{"glob": "a\\\\", "access": "deny"}'),
    ("glob from :tmpdir", FS % '{"glob": ":tmpdir/*.pem", "access": "deny"}'),
    ("glob of :cwd alone", FS % '{"glob": ":cwd/", "access": "deny"}'),
    ("glob with a :cwd component", FS % '{"glob": "**/:cwd/*.pem", "access": "deny"}'),
    ("glob with :root after ~/", FS % '{"glob": "~/:root/x", "access": "deny"}'),
    ("glob without a literal first directory", FS % '{"glob": "/**/*.pem", "access": "deny"}'),
    # A run refuses a policy's own proxy ports (only sbx's proxy is reachable), so does
    # policy check, and the schema allows none.
    ("proxy_ports in proxy mode", NET % ('{"mode": "proxy", "proxy_ports": [3128],'
                                         ' "allowed_domains": ["example.com"]}')),
    ("best_effort not a limit", P % '"limits": {"best_effort": ["timeout_grace_seconds"]}'),
    ("best_effort twice", P % '"limits": {"best_effort": ["processes", "processes"]}'),
    ("best_effort not an array", P % '"limits": {"best_effort": "processes"}'),
    ("protected name with slash", P % '"filesystem": {"protected_names": ["a/b"]}'),
    ("protected name dot-dot", P % '"filesystem": {"protected_names": [".."]}'),
    ("empty protected name", P % '"filesystem": {"protected_names": [""]}'),
    ("duplicate protected name", P % '"filesystem": {"protected_names": [".git", ".git"]}'),
    ("unknown network mode", NET % '{"mode": "open"}'),
    ("unknown network key", NET % '{"mode": "enabled", "hosts": []}'),
    ("domains without proxy", NET % '{"mode": "restricted", "allowed_domains": ["a.com"]}'),
    ("denied domains without mode", NET % '{"denied_domains": ["a.com"]}'),
    ("proxy ports without proxy", NET % '{"mode": "enabled", "proxy_ports": [8080]}'),
    ("port 0", NET % '{"mode": "proxy", "proxy_ports": [0]}'),
    ("port 65536", NET % '{"mode": "proxy", "proxy_ports": [65536]}'),
    ("port as a string", NET % '{"mode": "proxy", "proxy_ports": ["80"]}'),
    ("duplicate port", NET % '{"mode": "proxy", "proxy_ports": [80, 80]}'),
    ("bare * domain", NET % '{"mode": "proxy", "allowed_domains": ["*"]}'),
    ("wildcard inside", NET % '{"mode": "proxy", "allowed_domains": ["a.*.com"]}'),
    ("domain with a path", NET % '{"mode": "proxy", "allowed_domains": ["a.com/x"]}'),
    ("domain label with -", NET % '{"mode": "proxy", "allowed_domains": ["-a.com"]}'),
    ("domain port 0", NET % '{"mode": "proxy", "allowed_domains": ["a.com:0"]}'),
    ("domain port 70000", NET % '{"mode": "proxy", "allowed_domains": ["a.com:70000"]}'),
    ("IPv6 domain", NET % '{"mode": "proxy", "allowed_domains": ["[::1]:80"]}'),
    ("empty domain", NET % '{"mode": "proxy", "allowed_domains": [""]}'),
    ("duplicate domain", NET % '{"mode": "proxy", "allowed_domains": ["a.com", "a.com"]}'),
    ("relative socket", NET % '{"mode": "restricted", "unix_sockets": ["run/x.sock"]}'),
    ("socket /", NET % '{"mode": "restricted", "unix_sockets": ["/"]}'),
    ("socket with dot-dot", NET % '{"mode": "restricted", "unix_sockets": ["/a/../b"]}'),
    ("allow_local_binding not a bool", NET % '{"allow_local_binding": 1}'),
    ("unknown limit", P % '"limits": {"threads": 4}'),
    ("processes too low", P % '"limits": {"processes": 7}'),
    ("open_files too low", P % '"limits": {"open_files": 3}'),
    ("negative limit", P % '"limits": {"cpu_seconds": -1}'),
    ("limit as a string", P % '"limits": {"timeout_seconds": "60"}'),
    ("grace over an hour", P % '"limits": {"timeout_grace_seconds": 3601}'),
    ("grace null", P % '"limits": {"timeout_grace_seconds": null}'),
    ("memory under 16 MiB", P % '"limits": {"memory_bytes": 1024}'),
    ("unknown environment key", P % '"environment": {"pass": []}'),
    ("unknown inherit", P % '"environment": {"inherit": "some"}'),
    ("empty keep pattern", P % '"environment": {"keep": [""]}'),
    ("pattern with =", P % '"environment": {"exclude": ["A=B"]}'),
    ("set name with *", P % '"environment": {"set": {"A*": "1"}}'),
    ("set name with =", P % '"environment": {"set": {"A=B": "1"}}'),
    ("set value not a string", P % '"environment": {"set": {"A": 1}}'),
]

# Accepted by both.
VALID = [
    ("short form", P % '"preset": "workspace-write"'),
    ("every short option", P % '"preset": "workspace-write", "writable_roots": ["/srv", "~/x",'
     ' ":cwd/build"], "network_access": true, "exclude_tmpdir_env_var": true,'
     ' "exclude_slash_tmp": false'),
    ("read-only with network", P % '"preset": "read-only", "network_access": true'),
    ("danger-full-access", P % '"preset": "danger-full-access"'),
    ("external-sandbox", P % '"preset": "external-sandbox", "network_access": false'),
    ("empty full form", '{"version": 1}'),
    ("special paths", FS % ('{"path": ":root", "access": "read"}, {"path": ":cwd/", "access":'
                            ' "write"}, {"path": ":tmpdir", "access": "write"}, {"path":'
                            ' ":slash_tmp", "access": "write"}, {"path": ":minimal",'
                            ' "access": "read"}, {"path": "~", "access": "read"}')),
    (":caches", FS % '{"path": ":root", "access": "read"}, {"path": ":caches", "access": "write"}'),
    (":caches as a writable root", P % '"preset": "workspace-write", "writable_roots": [":caches"]'),
    ("odd but valid paths", FS % ('{"path": "//a//b/", "access": "read"}, {"path": "/a/...",'
                                  ' "access": "deny"}, {"path": "/.hidden", "access": "read"}')),
    ("globs", FS % ('{"glob": "**/*.pem", "access": "deny"}, {"glob": "~/.ssh/id_*", "access":'
                    ' "deny"}, {"glob": "[!a]*.{key,pem}", "access": "deny"}, {"glob":'
                    ' "\\\\[x\\\\]", "access": "deny"}, {"glob": "a[]]b", "access": "deny"}')),
    ("external kind without entries", P % '"filesystem": {"kind": "external"}'),
    ("no protected names", P % '"filesystem": {"protected_names": []}'),
    ("proxy", NET % ('{"mode": "proxy", "proxy_ports": [], "allowed_domains":'
                     ' ["Example.COM", "*.debian.org", "127.0.0.1:18081", "a.com:0080"],'
                     ' "denied_domains": ["security.debian.org"], "unix_sockets":'
                     ' ["/run/docker.sock", "~/.ssh/agent.sock"], "allow_local_binding": true}')),
    ("empty lists in restricted mode", NET % '{"mode": "restricted", "allowed_domains": [],'
     ' "proxy_ports": []}'),
    # Best-effort where a host cannot hold them (policy check refuses a limit that cannot
    # hold here and is not best-effort; memory_bytes needs a cgroup v2 memory controller).
    ("limits", P % ('"limits": {"processes": null, "open_files": 1024, "file_size_bytes": 1,'
                    ' "address_space_bytes": 67108864, "memory_bytes": 16777216, "cpu_seconds":'
                    ' 60, "timeout_seconds": 31536000, "timeout_grace_seconds": 0, "best_effort":'
                    ' ["open_files", "file_size_bytes", "address_space_bytes", "memory_bytes",'
                    ' "cpu_seconds", "timeout_seconds"]}')),
    ("best-effort limits", P % ('"limits": {"memory_bytes": 16777216, "best_effort":'
                                ' ["memory_bytes", "processes"]}')),
    ("globs from :cwd/ and escaped", FS % ('{"glob": ":cwd/many/*.pem", "access": "deny"},'
                                           ' {"glob": "\\\\:cwd/x", "access": "deny"}')),
    ("environment", P % ('"preset": "read-only", "environment": {"inherit": "none", "keep":'
                         ' ["GITHUB_*"], "exclude": ["AWS_*"], "include_only": [], "set":'
                         ' {"PATH": "/usr/bin", "EMPTY": ""}}')),
]

# What only the parser refuses, as the schema's description says (JSON Schema cannot see
# duplicate keys, calls 1.0 an integer, and regular expressions cannot count braces).
SCHEMA_GAPS = [
    # The schema is the same on every host; the parser resolves for this (POSIX) one.
    ("a Windows path on a POSIX host", FS % '{"path": "C:\\\\x", "access": "read"}'),
    ("a '..' between backslashes", FS % '{"path": "C:\\\\a\\\\..\\\\b", "access": "read"}'),
    ("version 1.0", '{"version": 1.0}'),
    ("duplicate key", '{"version": 1, "version": 1}'),
    ("unbalanced brace in a glob", FS % '{"glob": "*.{a,b", "access": "deny"}'),
    ("domains differing in case", NET % '{"mode": "proxy", "allowed_domains": ["a.com", "A.com"]}'),
    ("sockets differing in a slash", NET % '{"unix_sockets": ["/a/s", "/a//s"]}'),
]


class PolicySchema(ExtrasCase):
    def schema(self):
        with open(os.path.join(SHARE, "sbx", "policy.schema.json"), encoding="utf-8") as f:
            return json.load(f)

    def validator(self):
        return jsonschema.Draft202012Validator(self.schema())

    def test_installed_printed_and_source_schema_are_one_valid_2020_12_schema(self):
        printed = self.sbx("policy", "schema")
        self.assertEqual(printed.returncode, 0, shown(printed))
        with open(os.path.join(SOURCE, "core/schema/policy.schema.json"), encoding="utf-8") as f:
            source = f.read()
        with open(os.path.join(SHARE, "sbx", "policy.schema.json"), encoding="utf-8") as f:
            self.assertEqual(f.read(), source)
        self.assertEqual(printed.stdout, source)
        schema = json.loads(source)
        self.assertEqual(schema["$schema"], "https://json-schema.org/draft/2020-12/schema")
        jsonschema.Draft202012Validator.check_schema(schema)

    def test_every_golden_and_example_policy_validates_with_both(self):
        examples = example_policies()
        # The goldens (19, less the refused one) and the READMEs' examples: a lost source would
        # shrink this list.
        self.assertGreaterEqual(len(examples), 25, [where for where, _ in examples])
        validator = self.validator()
        for where, policy in examples:
            with self.subTest(where=where, policy=policy):
                errors = [e.message for e in validator.iter_errors(policy)]
                self.assertEqual(errors, [], f"{where}: the schema refuses {policy}")
                result = self.parser_verdict(json.dumps(policy))
                self.assertEqual(result.returncode, 0, shown(result))

    def test_refused_goldens_are_refused_by_both(self):
        validator = self.validator()
        refused = [(where, policy) for where, policy in golden_policies()
                   if where in REFUSED_GOLDENS]
        self.assertEqual(len(refused), len(REFUSED_GOLDENS))
        for where, policy in refused:
            with self.subTest(where=where):
                self.assertFalse(validator.is_valid(policy), where)
                self.assertEqual(self.parser_verdict(json.dumps(policy)).returncode, 2, where)

    def test_presets_as_policy_show_prints_them_validate(self):
        validator = self.validator()
        for preset in ["read-only", "workspace-write", "danger-full-access", "external-sandbox"]:
            shown_policy = self.sbx("policy", "show", "--preset", preset)
            self.assertEqual(shown_policy.returncode, 0, shown(shown_policy))
            errors = [e.message for e in validator.iter_errors(json.loads(shown_policy.stdout))]
            self.assertEqual(errors, [], preset)

    def test_invalid_corpus_is_refused_by_schema_and_parser(self):
        self.assertGreaterEqual(len(INVALID), 40)
        validator = self.validator()
        for name, text in INVALID:
            with self.subTest(name=name):
                document = json.loads(text)
                self.assertFalse(validator.is_valid(document), f"schema accepts: {text}")
                result = self.parser_verdict(text)
                self.assertEqual(result.returncode, 2, f"parser on {text}:" + shown(result))

    def test_valid_corpus_is_accepted_by_schema_and_parser(self):
        validator = self.validator()
        for name, text in VALID:
            with self.subTest(name=name):
                errors = [e.message for e in validator.iter_errors(json.loads(text))]
                self.assertEqual(errors, [], text)
                result = self.parser_verdict(text)
                self.assertEqual(result.returncode, 0, shown(result))

    def test_documented_gaps_are_refused_by_the_parser(self):
        validator = self.validator()
        for name, text in SCHEMA_GAPS:
            with self.subTest(name=name):
                result = self.parser_verdict(text)
                self.assertEqual(result.returncode, 2, shown(result))
                # json.loads keeps the last of duplicate keys: the schema cannot see them.
                self.assertTrue(validator.is_valid(json.loads(text)),
                                f"the schema now refuses {text}; drop it from the gaps")


# ---- man pages and completions ----

COMPLETIONS = {
    "bash": os.path.join("bash-completion", "completions", "sbx"),
    "zsh": os.path.join("zsh", "vendor-completions", "_sbx"),
    "fish": os.path.join("fish", "vendor_completions.d", "sbx.fish"),
}
GENERATED = {"bash": os.path.join("bash", "sbx"), "zsh": os.path.join("zsh", "_sbx"),
             "fish": os.path.join("fish", "sbx.fish")}

# Types "sbx po<TAB>" into an interactive zsh that loaded the completion directory, then runs
# `print -r -- COMPLETED:<the line>` so the completed line comes back as output.
ZSH_DRIVER = r'''
zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z "PS1='%% '; bindkey -e; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; print INIT''-DONE"
zpty -r z out '*INIT-DONE*' || exit 3
zpty -r z out '*% ' || exit 3
zpty -n -w z "$2"$'\t'
# Lets zle finish completing before the next keys arrive (with typeahead pending it completes
# differently); it shows no sign of being done. Too short fails the test, never passes it.
sleep 0.5
zpty -n -w z $'\C-a'"print -r -- COMPLETED:"$'\n'
zpty -r z out '*COMPLETED:*% ' || exit 3
print -r -- "${out//$'\r'/}"
zpty -d z
'''


class CliDocs(ExtrasCase):
    def describe(self):
        result = self.sbx("__describe-cli", "--json")
        self.assertEqual(result.returncode, 0, shown(result))
        return json.loads(result.stdout)

    def regenerate(self):
        out = os.path.join(self.tmp, "regenerated")
        result = run(["python3", os.path.join(SOURCE, "cmake/scripts/gen_cli_docs.py"), "--sbx",
                      SBX, "--version", VERSION, "--out", out])
        self.assertEqual(result.returncode, 0, shown(result))
        return out

    def test_installed_pages_and_completions_are_what_the_cli_generates(self):
        out = self.regenerate()
        installed_pages = sorted(os.listdir(os.path.join(SHARE, "man", "man1")))
        self.assertEqual(installed_pages, sorted(os.listdir(os.path.join(out, "man1"))))
        verbs = [sub["name"] for sub in self.describe()["subcommands"]]
        self.assertEqual(installed_pages, sorted(["sbx.1"] + [f"sbx-{v}.1" for v in verbs]))
        for page in installed_pages:
            with open(os.path.join(out, "man1", page), encoding="utf-8") as a, \
                 open(os.path.join(SHARE, "man", "man1", page), encoding="utf-8") as b:
                self.assertEqual(a.read(), b.read(), page)
        for shell, path in COMPLETIONS.items():
            with open(os.path.join(out, GENERATED[shell]), encoding="utf-8") as a, \
                 open(os.path.join(SHARE, path), encoding="utf-8") as b:
                self.assertEqual(a.read(), b.read(), shell)

    def test_hidden_describe_is_not_documented(self):
        self.assertNotIn("__describe", self.sbx("--help").stdout)
        self.assertNotIn("__describe", json.dumps(self.describe()))
        self.assertNotIn("__describe", self.sbx_man("sbx.1"))

    def sbx_man(self, page):
        result = run(["man", "-l", os.path.join(SHARE, "man", "man1", page)],
                     env={**self.env, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat",
                          "LANG": "C", "LC_ALL": "C"})  # ASCII: '-' stays '-'
        self.assertEqual(result.returncode, 0, shown(result))
        return result.stdout

    def man_warnings(self, path):
        result = run(["man", "--warnings", "-l", path],
                     env={**self.env, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"})
        return result.returncode, result.stderr

    def test_man_renders_every_page_without_warnings(self):
        # The check itself: a page with an unknown macro does warn.
        broken = self.write("broken.1", '.TH BROKEN 1\n.SH NAME\nbroken \\- x\n.XYZZY\n')
        self.assertNotEqual(self.man_warnings(broken)[1], "", "man --warnings stays silent")
        for page in sorted(os.listdir(os.path.join(SHARE, "man", "man1"))):
            with self.subTest(page=page):
                code, warnings = self.man_warnings(os.path.join(SHARE, "man", "man1", page))
                self.assertEqual((code, warnings), (0, ""), page)

    def test_every_command_and_option_is_in_its_page(self):
        root = self.describe()
        for verb in root["subcommands"]:
            text = self.sbx_man(f"sbx-{verb['name']}.1")
            stack = [(verb, "sbx " + verb["name"])]
            while stack:
                app, path = stack.pop()
                self.assertIn(app["description"].split(";")[0][:40].split("\n")[0],
                              " ".join(text.split()), path)
                for option in app["options"]:
                    for name in option["names"]:
                        if name not in ("--help", "-h"):
                            self.assertIn(name, text, f"{path}: {name}")
                for sub in app["subcommands"]:
                    self.assertIn(path + " " + sub["name"], text)
                    stack.append((sub, path + " " + sub["name"]))
        top = self.sbx_man("sbx.1")
        for verb in root["subcommands"]:
            self.assertIn("sbx-" + verb["name"], top)
        for option in root["options"]:
            for name in option["names"]:
                self.assertIn(name, top)

    def test_every_fixed_value_set_is_described(self):
        """The fixed value sets the completions offer come from the parser's definitions: the
        presets and network modes in every verb that takes a policy, the backends of --backends
        and `debug BACKEND`, the --from formats, the schema names."""
        presets = ["read-only", "workspace-write", "danger-full-access", "external-sandbox"]
        modes = ["restricted", "enabled", "proxy"]
        backends = ["bwrap", "landlock", "seatbelt", "windows"]
        root = self.describe()
        by_path = {" ".join(path[1:]): app for path, app in walk(root)}

        def choices(app, name):
            return [o["choices"] for o in app["options"] if name in o["names"] or
                    (o["positional"] and o["name"] == name)][0]

        policy_verbs = [path for path, app in by_path.items()
                        if any("--preset" in o["names"] for o in app["options"])]
        self.assertEqual(sorted(policy_verbs), ["context", "debug", "exec", "explain",
                                                "policy check", "policy show"])
        for path in policy_verbs:
            with self.subTest(verb=path):
                self.assertEqual(choices(by_path[path], "--preset"), presets)
                self.assertEqual(choices(by_path[path], "--network"), modes)
        self.assertEqual(choices(root, "--backends"), backends)
        self.assertEqual(choices(by_path["debug"], "backend"), backends)
        self.assertEqual(choices(by_path["policy import"], "--from"), ["codex", "srt"])
        self.assertIn("exec", choices(by_path["schema"], "name"))

    def test_bash_completes_every_fixed_value_set(self):
        """Every option with fixed values, in every verb, completes to exactly those values."""
        cases = []
        for path, app in walk(self.describe()):
            for option in app["options"]:
                if option["choices"]:
                    words = list(path) + ([] if option["positional"] else [option["names"][0]])
                    if app["subcommands"] and option["positional"]:
                        continue
                    cases.append((words, option["choices"]))
        self.assertGreater(len(cases), 15)
        script = ('source "$1"; shift\n'
                  'while IFS= read -r line; do read -ra COMP_WORDS <<< "$line";'
                  ' COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _sbx;'
                  ' echo "${COMPREPLY[*]}"; done')
        result = subprocess.run(
            ["bash", "--norc", "-c", script, "bash", os.path.join(SHARE, COMPLETIONS["bash"])],
            input="".join(" ".join(words) + "\n" for words, _ in cases), capture_output=True,
            text=True, timeout=TIMEOUT, env=self.env, check=False)
        self.assertEqual(result.returncode, 0, shown(result))
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), len(cases), shown(result))
        for (words, expected), line in zip(cases, lines):
            self.assertEqual(line.split(), expected, " ".join(words))

    def test_bash_loads_the_completion_and_completes(self):
        script = ('source "$1"; complete -p sbx || exit 4\n'
                  't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _sbx;'
                  ' echo "${COMPREPLY[*]}"; }\n'
                  't sbx po; t sbx policy im; t sbx policy import --from ""; t sbx exec --netw;'
                  ' t sbx --log-level w; t sbx explain --preset w; t sbx --backends l;'
                  ' t sbx debug s; t sbx context --network p')
        result = run(["bash", "--norc", "-c", script, "bash",
                      os.path.join(SHARE, COMPLETIONS["bash"])], env=self.env)
        self.assertEqual(result.returncode, 0, shown(result))
        lines = result.stdout.splitlines()
        self.assertIn("-F _sbx sbx", lines[0])
        self.assertEqual(lines[1:], ["policy", "import", "codex srt", "--network", "warn",
                                     "workspace-write", "landlock", "seatbelt", "proxy"])

    def test_zsh_loads_the_completion_and_completes(self):
        driver = self.write("driver.zsh", ZSH_DRIVER)
        directory = os.path.join(SHARE, os.path.dirname(COMPLETIONS["zsh"]))
        for typed, completed in [("sbx po", "sbx policy"),
                                 ("sbx policy import --from s", "sbx policy import --from srt"),
                                 ("sbx exec --netw", "sbx exec --network"),
                                 ("sbx exec --preset wo", "sbx exec --preset workspace-write"),
                                 ("sbx debug la", "sbx debug landlock")]:
            with self.subTest(typed=typed):
                result = run(["zsh", "-f", driver, directory, typed], env=self.env)
                self.assertEqual(result.returncode, 0, shown(result))
                self.assertRegex(result.stdout, r"(?m)^COMPLETED:" + re.escape(completed) + r" ?$",
                                 shown(result))

    def test_fish_loads_the_completion_and_completes(self):
        path = os.path.join(SHARE, COMPLETIONS["fish"])
        for typed, expected in [("sbx po", {"policy"}),
                                ("sbx policy ", {"check", "show", "widen", "approve", "schema",
                                                 "import"}),
                                ("sbx policy import --from ", {"codex", "srt"}),
                                ("sbx config ", {"show", "trust"}),
                                ("sbx policy show --preset ", {"read-only", "workspace-write",
                                                               "danger-full-access",
                                                               "external-sandbox"}),
                                ("sbx --backends ", {"bwrap", "landlock", "seatbelt",
                                                     "windows"}),
                                ("sbx context --network ", {"restricted", "enabled", "proxy"})]:
            with self.subTest(typed=typed):
                result = run(["fish", "--no-config", "-c", f"source {path}; complete -C '{typed}'"],
                             env=self.env)
                self.assertEqual(result.returncode, 0, shown(result))
                words = {line.split("\t")[0] for line in result.stdout.splitlines()}
                self.assertEqual(words, expected, shown(result))
        # `debug BACKEND -- CMD`: fish offers the backends beside the command names.
        result = run(["fish", "--no-config", "-c", f"source {path}; complete -C 'sbx debug '"],
                     env=self.env)
        words = {line.split("\t")[0] for line in result.stdout.splitlines()}
        self.assertLessEqual({"bwrap", "landlock", "seatbelt", "windows"}, words, shown(result))


# ---- policy import ----

class PolicyImport(ExtrasCase):
    def imported(self, source, name, *extra, code=0):
        result = self.sbx("policy", "import", "--from", source, os.path.join(FIXTURES, name),
                          "--json", *extra)
        self.assertEqual(result.returncode, code, shown(result))
        report = json.loads(result.stdout)
        self.assertEqual(sorted(report), ["ignored", "notes", "policy", "unmapped"])
        # The printed policy is one sbx accepts, and so does the schema.
        check = self.parser_verdict(json.dumps(report["policy"]))
        self.assertEqual(check.returncode, 0, shown(check))
        with open(os.path.join(SHARE, "sbx", "policy.schema.json"), encoding="utf-8") as f:
            jsonschema.validate(report["policy"], json.load(f),
                                cls=jsonschema.Draft202012Validator)
        return report

    @staticmethod
    def entries(report):
        return [(e.get("path") or "glob:" + e["glob"], e["access"])
                for e in report["policy"]["filesystem"]["entries"]]

    @staticmethod
    def names(items):
        return sorted(item["setting"] for item in items)

    def test_codex_workspace_write_maps_everything(self):
        report = self.imported("codex", "codex-workspace-write.toml")
        self.assertEqual(self.entries(report), [
            (":root", "read"), (":cwd", "write"), ("/srv/cache", "write"),
            ("/home/me/.cargo", "write"), (":tmpdir", "write")])  # exclude_slash_tmp = true
        self.assertEqual(report["policy"]["network"]["mode"], "enabled")
        env = report["policy"]["environment"]
        self.assertEqual((env["inherit"], env["exclude"], env["set"], env["keep"]),
                         ("core", ["AWS_*", "AZURE_*"], {"CARGO_TERM_COLOR": "never", "CI": "1"},
                          []))
        self.assertEqual(report["unmapped"], [])
        self.assertEqual(self.names(report["ignored"]),
                         ["approval_policy", "mcp_servers", "model", "model_reasoning_effort",
                          "tui"])

    def test_codex_selected_profile_decides_the_sandbox_mode(self):
        report = self.imported("codex", "codex-profiles.toml")
        self.assertEqual(self.entries(report), [(":root", "read")])
        self.assertEqual(report["policy"]["network"]["mode"], "restricted")
        ignored = self.names(report["ignored"])
        for name in ["sandbox_mode", "sandbox_workspace_write.network_access",
                     "profiles.build.sandbox_mode", "profiles.review.model"]:
            self.assertIn(name, ignored)
        other = self.imported("codex", "codex-profiles.toml", "--profile", "build")
        self.assertEqual(other["policy"]["filesystem"]["kind"], "unrestricted")
        self.assertEqual(other["policy"]["network"]["mode"], "enabled")
        missing = self.sbx("policy", "import", "--from", "codex", "--profile", "nope",
                           os.path.join(FIXTURES, "codex-profiles.toml"))
        self.assertEqual(missing.returncode, 2, shown(missing))
        self.assertIn('"nope"', missing.stderr)

    def test_codex_permission_profile_maps_paths_globs_and_network(self):
        report = self.imported("codex", "codex-permissions.toml")
        self.assertEqual(sorted(self.entries(report)), sorted([
            ("/var/cache/build", "write"), (":root", "read"), (":tmpdir", "write"),
            ("glob:**/*.env", "deny"), (":cwd", "write"), (":cwd/docs", "read"),
            ("~/.ssh", "deny")]))
        self.assertEqual(report["policy"]["network"]["mode"], "enabled")
        self.assertEqual(report["unmapped"], [])
        self.assertEqual(self.names(report["ignored"]),
                         ["permissions.dev.description", "permissions.other"])
        self.assertTrue(any("glob_scan_max_depth" in note for note in report["notes"]))

    def test_codex_child_profile_replaces_its_parents_key(self):
        report = self.imported("codex", "codex-permissions-extends.toml")
        # Not (":cwd", "write") next to (":cwd", "read"): sbx's tie-break would let write win.
        self.assertEqual(self.entries(report), [(":root", "read"), (":cwd", "read"),
                                                ("~/.ssh", "deny")])
        self.assertEqual((report["unmapped"], report["ignored"]), ([], []))

    def test_codex_settings_without_equivalent_are_listed_and_exit_3(self):
        report = self.imported("codex", "codex-permissions-proxy.toml", code=3)
        self.assertEqual(self.names(report["unmapped"]), [
            'permissions.locked.filesystem."/etc/ssl/**/*.key"',
            'permissions.locked.filesystem.":future_token"',
            "permissions.locked.network.domains", "permissions.locked.network.mode",
            "permissions.locked.workspace_roots"])
        # extends = ":workspace": the built-in parent's grants, network from the profile.
        self.assertEqual(self.entries(report), [(":root", "read"), (":cwd", "write"),
                                                (":slash_tmp", "write"), (":tmpdir", "write")])
        self.assertEqual(report["policy"]["network"]["mode"], "restricted")

    def test_srt_settings_map_to_proxy_network_and_entries(self):
        report = self.imported("srt", "srt-settings.json")
        self.assertEqual(self.entries(report), [
            (":root", "read"), ("~/.ssh", "deny"), ("~/.aws", "deny"), ("glob:**/*.pem", "deny"),
            (":cwd", "write"), ("/tmp/build", "write"), (":cwd/.env", "read"),
            ("~/.aws/config", "deny")])
        network = report["policy"]["network"]
        self.assertEqual((network["mode"], network["allowed_domains"], network["denied_domains"],
                          network["unix_sockets"]),
                         ("proxy", ["github.com", "*.npmjs.org", "registry.yarnpkg.com"],
                          ["evil.npmjs.org"], ["/var/run/docker.sock"]))
        self.assertEqual(report["unmapped"], [])
        self.assertEqual(self.names(report["ignored"]), ["enableWeakerNestedSandbox"])

    def test_srt_settings_without_equivalent_are_listed_and_exit_3(self):
        report = self.imported("srt", "srt-unmapped.json", code=3)
        self.assertEqual(self.names(report["unmapped"]), [
            "enableWeakerNestedSandbox", "filesystem.allowGitConfig", "filesystem.allowWrite[1]",
            "mandatoryDenySearchDepth", "network.allowAllUnixSockets",
            "network.allowedDomains[1]", "network.deniedDomains[0]", "network.httpProxyPort"])
        reasons = {item["setting"]: item["reason"] for item in report["unmapped"]}
        self.assertIn("IPv6", reasons["network.allowedDomains[1]"])
        self.assertEqual(report["policy"]["network"]["allowed_domains"], ["example.com"])
        self.assertIn((":cwd/src", "write"), self.entries(report))

    def test_srt_loopback_domain_without_port_is_unmapped_with_the_fix(self):
        path = self.write("srt.json", json.dumps({
            "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []},
            "network": {"allowedDomains": ["example.com", "127.0.0.1"], "deniedDomains": []}}))
        result = self.sbx("policy", "import", "--from", "srt", path, "--json")
        self.assertEqual(result.returncode, 3, shown(result))
        report = json.loads(result.stdout)
        reasons = {item["setting"]: item["reason"] for item in report["unmapped"]}
        self.assertIn('write "127.0.0.1:PORT"', reasons["network.allowedDomains[1]"],
                      shown(result))
        self.assertEqual(report["policy"]["network"]["allowed_domains"], ["example.com"])

    def test_deny_write_above_allow_write_makes_it_read_only(self):
        path = self.write("srt.json", json.dumps({
            "filesystem": {"denyRead": [], "allowWrite": ["/work/a", "/work/b"],
                           "denyWrite": ["/work"]},
            "network": {"allowedDomains": [], "deniedDomains": ["x.com"]}}))
        result = self.sbx("policy", "import", "--from", "srt", path, "--json")
        self.assertEqual(result.returncode, 0, shown(result))
        report = json.loads(result.stdout)
        self.assertEqual(self.entries(report), [(":root", "read"), ("/work/a", "read"),
                                                ("/work/b", "read"), ("/work", "read")])
        self.assertEqual(report["policy"]["network"]["mode"], "restricted")
        self.assertEqual(self.names(report["ignored"]), ["network.deniedDomains[0]"])

    def test_text_mode_prints_the_policy_and_lists_on_stderr(self):
        result = self.sbx("policy", "import", "--from", "srt",
                          os.path.join(FIXTURES, "srt-unmapped.json"))
        self.assertEqual(result.returncode, 3, shown(result))
        policy = self.write("imported.json", result.stdout)
        check = self.sbx("policy", "check", "--cwd", self.tmp, "--policy", policy)
        self.assertEqual(check.returncode, 0, shown(check))
        self.assertIn("sbx: unmapped: network.httpProxyPort: sbx has no equivalent",
                      result.stderr.splitlines())

    def test_invalid_input_and_bad_usage_exit_2_an_unreadable_file_125(self):
        for source, name in [("codex", "codex-syntax-error.toml"),
                             ("codex", "codex-unknown-mode.toml"),
                             ("srt", "srt-wrong-type.json"), ("srt", "srt-not-json.json"),
                             ("srt", "codex-workspace-write.toml")]:
            with self.subTest(name=name):
                result = self.sbx("policy", "import", "--from", source,
                                  os.path.join(FIXTURES, name))
                self.assertEqual(result.returncode, 2, shown(result))
                self.assertRegex(result.stderr, r"^sbx: invalid .+; fix the file\n$")
                self.assertEqual(result.stdout, "")
        # Deep nesting is refused before a recursive parser could overflow the stack.
        deep = 100000
        for source, text in [("codex", "a = " + "[" * deep + "]" * deep + "\n"),
                             ("codex", 'a = "[[[[" # ' + "[" * deep + "\n" + "b = [[1], [2]]\n"),
                             ("srt", '{"network": ' + "[" * deep + "]" * deep + "}")]:
            with self.subTest(deep=text[:12]):
                result = self.sbx("policy", "import", "--from", source, self.write("deep", text))
                if "b = " in text:  # brackets in strings and comments do not count
                    self.assertEqual(result.returncode, 0, shown(result))
                    continue
                self.assertEqual(result.returncode, 2, shown(result))
                self.assertRegex(result.stderr, r"^sbx: invalid .+(deeper than 64|too deep)")
        for args, code in [([
                "--from", "yaml", os.path.join(FIXTURES, "srt-settings.json")], 2),
                           (["--from", "srt"], 2),
                           (["--from", "srt", "--profile", "x",
                             os.path.join(FIXTURES, "srt-settings.json")], 2),
                           (["--from", "srt", os.path.join(self.tmp, "missing.json")], 125),
                           (["--from", "codex", self.tmp], 125)]:
            with self.subTest(args=args):
                result = self.sbx("policy", "import", *args)
                self.assertEqual(result.returncode, code, shown(result))
                self.assertRegex(result.stderr.splitlines()[0], r"^sbx: .+; .+")


if __name__ == "__main__":
    main()
