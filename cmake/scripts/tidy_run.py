#!/usr/bin/env python3
"""Runs clang-tidy on every translation unit of a compile database, in parallel, at low priority.

Usage: tidy_run.py <compile-db-dir> <build-dir> <jobs> <clang-tidy args...>

Prints the findings of each failing file together and exits 1 if any file has one (.clang-tidy
sets WarningsAsErrors), 0 if all are clean.

A translation unit that was clean before is not checked again while nothing it reads has
changed: <build-dir>/tidy-cache/ holds one empty file per clean result, named by the SHA-256 of
everything clang-tidy's answer depends on: the clang-tidy executable (path, size, mtime) and its
--version, the arguments, this script and check_style.sh, every .clang-tidy from the source's
directory up to /, the compile command, and the contents of the source and of every file it
includes as the build's dependency log records them (`ninja -t deps`). Without a valid
dependency record (another generator, an object never built) the file is checked, never taken
from the cache. A fresh build directory checks everything. Findings are never cached: a failing
file is checked and printed on every run. Results no run has used for 30 days are removed.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# clang-tidy runs at the lowest priority (nice(1)): ctest and cmake/scripts/test.sh run it beside
# the tests, which must not lose CPU to it (the pid scope suite's victim has to burn 1.5 s of CPU
# within 20 s); it takes the CPU they leave idle.
NICE = 19
# Clean results no run has used for this long are removed.
CACHE_DAYS = 30


class Hasher:
    """SHA-256 of files by path, each file read once per run."""

    def __init__(self):
        self.known = {}

    def file(self, path):
        if path not in self.known:
            digest = hashlib.sha256()
            try:
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
                self.known[path] = digest.hexdigest()
            except OSError:
                self.known[path] = "missing"
        return self.known[path]


def ninja_program(build):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as cache:
            m = re.search(r"^CMAKE_MAKE_PROGRAM:[A-Z]+=(.*)$", cache.read(), re.M)
            if m and os.path.basename(m.group(1)).startswith("ninja"):
                return m.group(1)
    except OSError:
        pass
    return None


def dependency_log(build):
    """{object path relative to build: [dependency paths, absolute]} for every VALID record."""
    ninja = ninja_program(build)
    if not ninja:
        return {}
    try:
        out = subprocess.run([ninja, "-C", build, "-t", "deps"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            m = re.match(r"^(.*): #deps \d+, deps mtime \d+ \((\w+)\)$", line)
            current = None
            if m and m.group(2) == "VALID":
                current = deps.setdefault(m.group(1), [])
        elif line.strip() and current is not None:
            current.append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def tidy_configs(source):
    """Every .clang-tidy clang-tidy could read for `source`: its directory and each above."""
    found, directory = [], os.path.dirname(source)
    while True:
        candidate = os.path.join(directory, ".clang-tidy")
        if os.path.isfile(candidate):
            found.append(candidate)
        parent = os.path.dirname(directory)
        if parent == directory:
            return found
        directory = parent


def object_of(entry):
    args = shlex.split(entry["command"])
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return args[i + 1]
    return None


def cache_key(entry, deps, common, hasher):
    """The key of a clean result, or None when the dependencies are not known."""
    obj = object_of(entry)
    files = deps.get(obj) if obj else None
    if not files or entry["file"] not in files:
        return None
    digest = hashlib.sha256(common.encode())
    digest.update(f"{entry['directory']}\n{entry['command']}".encode())
    for path in tidy_configs(entry["file"]) + sorted(set(files)):
        digest.update(f"\n{path} {hasher.file(path)}".encode())
    return digest.hexdigest()


def common_part(tidy, tidy_args, hasher):
    binary = os.path.realpath(tidy)
    st = os.stat(binary)
    version = subprocess.run([tidy, "--version"], capture_output=True, text=True).stdout
    scripts = [os.path.join(HERE, name) for name in ("tidy_run.py", "check_style.sh")]
    return "\n".join([binary, str(st.st_size), str(st.st_mtime_ns), version,
                      json.dumps(tidy_args)] + [hasher.file(s) for s in scripts])


def check(tidy, db_dir, tidy_args, entry):
    result = subprocess.run(["nice", "-n", str(NICE), tidy, "-p", db_dir] + tidy_args +
                            [entry["file"]], capture_output=True, text=True)
    return entry, result


def main():
    db_dir, build, jobs = sys.argv[1:4]
    tidy_args = sys.argv[4:]
    tidy = os.environ.get("SBX_CLANG_TIDY", "clang-tidy")
    with open(os.path.join(db_dir, "compile_commands.json")) as db:
        entries = json.load(db)
    hasher = Hasher()
    deps = dependency_log(build)
    common = common_part(tidy, tidy_args, hasher)
    cache = os.path.join(build, "tidy-cache")
    os.makedirs(cache, exist_ok=True)
    keys = {e["file"]: cache_key(e, deps, common, hasher) for e in entries}
    todo = [e for e in entries
            if not keys[e["file"]] or not os.path.exists(os.path.join(cache, keys[e["file"]]))]
    print(f"check_style: clang-tidy on {len(entries)} translation units, {len(todo)} to check "
          f"({len(entries) - len(todo)} unchanged since they were clean: {cache}), "
          f"{jobs} in parallel", flush=True)
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=int(jobs)) as pool:
        for entry, result in pool.map(lambda e: check(tidy, db_dir, tidy_args, e), todo):
            if result.returncode != 0:
                failed.append(entry["file"])
                print(f"== {entry['file']} (clang-tidy exit {result.returncode})")
                print(result.stdout + result.stderr, flush=True)
            elif keys[entry["file"]]:
                open(os.path.join(cache, keys[entry["file"]]), "w").close()
    # A result stays while some run uses it (switching branches back and forth keeps both).
    now = time.time()
    for key in keys.values():
        if key and os.path.exists(os.path.join(cache, key)):
            os.utime(os.path.join(cache, key), (now, now))
    for name in os.listdir(cache):
        if now - os.path.getmtime(os.path.join(cache, name)) > CACHE_DAYS * 86400:
            os.remove(os.path.join(cache, name))
    if failed:
        print(f"check_style: clang-tidy findings in {len(failed)} files:\n  " +
              "\n  ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
