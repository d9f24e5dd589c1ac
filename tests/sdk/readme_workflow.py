#!/usr/bin/env python3
"""sdk.readme_workflow: the vendor workflow of sdk/examples/firejail/README.md, run as written.

The fenced block after `<!-- tested: sdk.readme_workflow -->` is run by bash (-e: the first
failing command fails the test) in a scratch directory whose `sdk` is the source tree's, with
the three variables at the block's top pointing into the test's own places: SBX_BUILD (this
build tree), SDK (a scratch prefix), VENDOR_PREFIX (below the installed test tree, which only
root can write: a trusted plugin directory), HOME (a scratch directory: `~/proj`), and the
installed sbx first on PATH. Between steps 4 and 5 the harness asks the probe whether firejail
can run here; when it cannot, step 5 is skipped with the probe's reason (exit 77).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

MARKER = "<!-- tested: sdk.readme_workflow -->"
STEP5 = "# 5. "


def block(readme):
    lines = open(readme, encoding="utf-8").read().splitlines()
    start = lines.index(MARKER)
    if not lines[start + 1].startswith("```"):
        sys.exit(f"{readme}: the line after {MARKER} must open a fenced block")
    end = lines.index("```", start + 2)
    return lines[start + 2:end]


# Between steps 4 and 5: step 5 runs a real sandbox, which needs a host where firejail runs.
GATE = r'''
probe=$(sbx --plugin-dir "$PLUGINS" backends --probe --json)
if ! printf '%s' "$probe" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
fj = [b for b in doc["backends"] if b["name"] == "firejail"]
if not fj:
    sys.exit("firejail was not loaded from the installed plugin directory: " + json.dumps(doc["rejected"]))
if not fj[0]["available"]:
    print("SKIPPED: firejail cannot run on this host: " + fj[0]["summary"])
    sys.exit(77)
'; then exit $?; fi
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--prefix", required=True, help="the installed sbx test tree")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIPPED: needs root: steps 4 and 5 install into a directory only root can write")
        return 77
    lines = block(os.path.join(args.source, "sdk/examples/firejail/README.md"))
    split = next(i for i, line in enumerate(lines) if line.startswith(STEP5))
    script = "\n".join(["set -ex"] + lines[:split] + [GATE] + lines[split:]) + "\n"

    scratch = tempfile.mkdtemp(prefix="readme-workflow-", dir=os.path.join(args.build, "tests"))
    vendor = os.path.join(args.prefix, "readme-vendor")
    shutil.rmtree(vendor, ignore_errors=True)
    try:
        os.symlink(os.path.join(args.source, "sdk"), os.path.join(scratch, "sdk"))
        home = os.path.join(scratch, "home")
        os.mkdir(home)
        env = dict(os.environ, SBX_BUILD=args.build, SDK=os.path.join(scratch, "sdk-prefix"),
                   VENDOR_PREFIX=vendor, HOME=home,
                   PATH=os.path.join(args.prefix, "bin") + os.pathsep + os.environ["PATH"])
        result = subprocess.run(["bash", "-c", script], cwd=scratch, env=env, check=False,
                                timeout=1500)
        if result.returncode == 77:
            return 77
        if result.returncode != 0:
            print(f"FAILED: the README's block exited {result.returncode}")
            return 1
        with open(os.path.join(home, "proj", "out.txt"), encoding="utf-8") as f:
            written = f.read()
        if written != "built\n":
            print(f"FAILED: the sandboxed command wrote {written!r} to ~/proj/out.txt")
            return 1
        print("1 passed, 0 failed")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(vendor, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
