#!/usr/bin/env python3
"""sdk.template: the template installed with the SDK (<sdk>/share/sbx/sdk/template), copied,
configured against the installed SDK alone (warnings as errors, the same compiler as sbx),
built, its own tests run, installed with the SDK's default prefix logic checked, installed into
a directory only root can write, and loaded by the real installed sbx: a command runs under it
(a write inside the workspace lands, one outside is refused), a policy it cannot enforce is
refused naming the rule, and `cpack` makes a .deb that installs it into the SDK prefix's
trusted plugin directory with a dependency on the plugin ABI. Skips (77, with the reason) where
it cannot be trusted (not root) or where Landlock is missing.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile

FAILED = []


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print("FAILED:", what)


def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=900,
                            **kwargs)
    return result


def must(args, **kwargs):
    result = run(args, **kwargs)
    if result.returncode != 0:
        print(f"$ {' '.join(args)}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}")
        sys.exit(1)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sdk", required=True, help="the installed SDK prefix (sdk.install)")
    parser.add_argument("--work", required=True)
    parser.add_argument("--prefix", required=True, help="the installed sbx test tree")
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--generator", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIPPED: needs root: the plugin must be installed below a directory only root "
              "can write for sbx to load it")
        return 77
    template = os.path.join(args.sdk, "share", "sbx", "sdk", "template")
    check(os.path.isfile(os.path.join(template, "CMakeLists.txt")),
          f"the template is installed with the SDK in {template}")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    source = os.path.join(args.work, "acme")
    build = os.path.join(args.work, "build")
    shutil.copytree(template, source)

    # Configured with no install prefix: the default is the SDK's, not /usr/local.
    configure = must(["cmake", "-S", source, "-B", build, "-G", args.generator,
                      f"-DCMAKE_PREFIX_PATH={args.sdk}", f"-DCMAKE_CXX_COMPILER={args.cxx}",
                      "-DCMAKE_BUILD_TYPE=Release", "-DACME_WERROR=ON",
                      "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
                      "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"])
    check(f"CMAKE_INSTALL_PREFIX defaults to the SDK's prefix {args.sdk}" in configure.stdout,
          "configuring says the install prefix defaults to the SDK's")
    cache = open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8").read()
    check(f"CMAKE_INSTALL_PREFIX:PATH={args.sdk}\n" in cache, "CMAKE_INSTALL_PREFIX is the SDK's")
    must(["cmake", "--build", build, "-j", "2"])
    tests = run(["ctest", "--test-dir", build, "--output-on-failure"])
    check(tests.returncode == 0, "the template's own tests pass:\n" + tests.stdout)

    # Into a directory only root can write, below the installed test tree; the install says
    # that no sbx is there, and how to name the directory.
    vendor = os.path.join(args.prefix, "sdk-template-vendor")
    shutil.rmtree(vendor, ignore_errors=True)
    try:
        installed = must(["cmake", "--install", build, "--prefix", vendor])
        plugin = next((os.path.join(d, f) for d, _, files in os.walk(vendor) for f in files
                       if f == "sbx-backend-acme.so"), None)
        check(plugin is not None, "cmake --install puts sbx-backend-acme.so in the prefix")
        if plugin is None:
            return 1
        plugins = os.path.dirname(plugin)
        check(oct(os.stat(plugin).st_mode & 0o777) == "0o644", "the plugin is installed 0644")
        check(f"where no sbx is installed" in installed.stderr and
              f"sbx --plugin-dir {plugins}" in installed.stderr,
              "the install says no sbx loads it there by itself:\n" + installed.stderr)
        return with_sbx(args, plugins, build)
    finally:
        shutil.rmtree(vendor, ignore_errors=True)


def with_sbx(args, plugins, build):
    sbx = os.path.join(args.prefix, "bin", "sbx")
    listed = must([sbx, "--plugin-dir", plugins, "backends", "--probe", "--json"])
    doc = json.loads(listed.stdout)
    acme = [b for b in doc["backends"] if b["name"] == "acme"]
    check(len(acme) == 1, "the installed sbx loads acme: " + json.dumps(doc["rejected"]))
    if not acme:
        return 1
    check(acme[0]["capabilities"] == ["write_restriction", "network_block", "syscall_filter"],
          f"acme declares what it enforces: {acme[0]['capabilities']}")

    packaged = package_check(build, args.sdk)
    if not acme[0]["available"]:
        print(f"SKIPPED: acme cannot run on this host: {acme[0]['summary']}")
        return 1 if FAILED else 77 if packaged else 1

    work = os.path.join(args.work, "ws")
    os.makedirs(work)
    policy = os.path.join(args.work, "policy.json")
    with open(policy, "w", encoding="utf-8") as f:
        json.dump({"version": 1, "filesystem": {"kind": "restricted", "protected_names": [],
                   "entries": [{"path": "/", "access": "read"},
                               {"path": ":cwd", "access": "write"}]},
                   "network": {"mode": "restricted"}}, f)
    outside = os.path.join(args.prefix, "sdk-template-outside.txt")
    script = f'echo inside > in.txt && if echo x > {outside}; then exit 9; fi'
    result = run([sbx, "--plugin-dir", plugins, "--backends", "acme", "exec", "--json",
                  "--policy", policy, "--cwd", work, "--", "/bin/sh", "-c", script])
    check(result.returncode == 0, f"a command runs under acme:\n{result.stdout}{result.stderr}")
    report = json.loads(result.stderr.strip().splitlines()[-1]) if result.stderr.strip() else {}
    check(report.get("backend") == "acme", f"the run's backend is acme: {report}")
    check(os.path.exists(os.path.join(work, "in.txt")), "the write inside the workspace lands")
    check(not os.path.exists(outside), "the write outside the workspace is refused")
    refused = run([sbx, "--plugin-dir", plugins, "debug", "acme", "--preset", "workspace-write",
                   "--cwd", work, "--", "/bin/true"])
    check(refused.returncode == 125 and
          "acme cannot keep protected names (protected_names)" in refused.stderr,
          f"a policy acme cannot enforce is refused by name:\n{refused.stderr}")
    return 1 if FAILED else 0


def package_check(build, sdk):
    """`cpack` in the build tree: the .deb (when dpkg-deb is here) and the .tar.gz install the
    plugin into <SDK prefix>/<plugin dir>, 0644, and the .deb depends on the plugin ABI."""
    must(["cpack", "-G", "TGZ"], cwd=build)
    names = []
    for name in os.listdir(build):
        if name.endswith(".tar.gz"):
            with tarfile.open(os.path.join(build, name)) as archive:
                names += [m for m in archive.getmembers() if m.name.endswith("sbx-backend-acme.so")]
    check(len(names) == 1 and names[0].name.split("/", 1)[1].startswith(sdk.lstrip("/") + "/lib")
          and (names[0].mode & 0o777) == 0o644,
          f"the archive installs the plugin below {sdk}: {[m.name for m in names]}")
    if shutil.which("dpkg-deb") is None:
        print("note: dpkg-deb is not installed: the .deb is not checked")
        return True
    must(["cpack", "-G", "DEB"], cwd=build)
    deb = [os.path.join(build, n) for n in os.listdir(build) if n.endswith(".deb")]
    check(len(deb) == 1, f"cpack makes one .deb: {deb}")
    if deb:
        contents = must(["dpkg-deb", "-c", deb[0]]).stdout
        check(f".{sdk}/lib" in contents and "sbx/backends/sbx-backend-acme.so" in contents,
              "the .deb installs into the SDK prefix's plugin directory:\n" + contents)
        depends = must(["dpkg-deb", "-f", deb[0], "Depends"]).stdout.strip()
        check(depends.startswith("sbx-plugin-abi-2 (>= 2."), f"the .deb depends on the ABI: {depends}")
    return not FAILED


if __name__ == "__main__":
    code = main()
    if FAILED:
        print(f"0 passed, {len(FAILED)} failed")
        sys.exit(1)
    if code == 0:
        print("1 passed, 0 failed")
    sys.exit(code)
