#!/usr/bin/env python3
"""Prints the compile commands clang-tidy checks: the product translation units of a build.

Usage: tidy_compile_db.py <source-root> <compile_commands.json> <dir|dir|...>

Keeps the sources under the given top-level directories of <source-root> (generated sources in
the build tree are not ours to fix). A unity build's batch file is replaced by one command per
source it includes, so each source is a translation unit of its own, as clang-tidy expects.
GCC-only options clang rejects are removed.
"""
import json
import os
import re
import sys

GCC_ONLY = (" -freorder-functions",)


def main():
    root, db_path, dirs = sys.argv[1:4]
    prefixes = tuple(d + os.sep for d in dirs.split("|"))
    entries, seen = [], set()
    for entry in json.load(open(db_path)):
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        sources = [path]
        if re.search(r"/Unity/unity_[^/]*$", path):
            with open(path) as batch:
                sources = re.findall(r'^#include "(.*)"$', batch.read(), re.M)
        for source in sources:
            if not os.path.relpath(source, root).startswith(prefixes) or source in seen:
                continue
            seen.add(source)
            command = entry["command"].replace(entry["file"], source)
            for option in GCC_ONLY:
                command = command.replace(option, "")
            entries.append({"directory": entry["directory"], "command": command, "file": source})
    json.dump(entries, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
