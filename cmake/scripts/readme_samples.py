#!/usr/bin/env python3
"""Regenerates, or checks, the `sbx` samples of the documentation from real output.

    readme_samples.py --sbx PREFIX/bin/sbx --write FILE.md...   rewrite the samples' output
    readme_samples.py --sbx PREFIX/bin/sbx --check FILE.md...   exit 1 (with a diff) if stale

A sample is a fenced code block whose previous line is `<!-- sample: SCENE -->` (SCENE: a key
of SCENES below). Each line of the block that starts with `$ ` is a command; a command goes on
over the next lines while its last line ends with `\\` or a quote is still open. The other lines
are the output of the command above them, replaced by what it really prints (stdout and stderr
as one stream, as a terminal shows them); blank lines right before a `$ ` line separate
commands and are kept. Blocks without the marker are left alone.

Every block runs in a scene of its own, made afresh: the commands, in order, in one bash (so
`$?` and `cd` carry from one to the next), as root, in a private mount and network namespace
(unshare(1)) where
  - /tmp and the home directory are empty tmpfs: nothing another run left there (/tmp/.git,
    /tmp/.codex, /tmp/.agents: the mount points of another run's protected names) changes what
    `explain` and `context` say about the writable root /tmp;
  - sbx's state of this boot (the bwrap probe's cache, the proxy's directories) is empty, and
    /etc/sbx (the managed settings) holds only the scene's files (/etc is then an overlay);
  - /opt is an overlay with the sbx given with --sbx bind-mounted at /opt/sbx, the prefix the
    documentation shows, so paths and the columns aligned on them are what sbx really prints;
  - the network is loopback only, with the scene's HTTP servers on it (a stand-in for the
    hosts the proxy samples reach): nothing leaves the machine, and the ports are free.
Mounts the host has at or below those directories are detached in that namespace first.
The scene's working directory is created empty (`git init` when the scene says so) with its
files; the environment is HOME, LANG=C.UTF-8, PATH=/opt/sbx/bin:/usr/bin:/bin and the scene's
variables. A sample that would be too long whole shows part of a JSON document through jq, in
its command line. Then normalise() replaces what still differs between hosts of the reference
kind (Debian 12, root, bwrap): the kernel's version string and curl's durations. Nothing else
is: a sample whose output depends on more is a sample to choose differently.

Exit status: 0 fresh (or rewritten), 1 stale (--check), 2 a malformed marker or block or a
scene that failed, 77 this host cannot make the scenes (not root, a tool missing): ctest's
skip, with the reason. Python stdlib only.
"""
import argparse
import difflib
import encodings.idna  # noqa: F401 (before the scene covers a home directory that may hold Python)
import fcntl
import http.server
import json
import os
import pwd
import re
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import threading

DOC_PREFIX = "/opt/sbx"
# /proc/version of the host the documentation's samples were first made on (kernel 6.18).
DOC_KERNEL = ("Linux version 6.18.44-fc-v1045 (builder@sandboxing) (gcc (GCC) 15.3.0, GNU ld "
              "(GNU Binutils) 2.46) #1 SMP PREEMPT_DYNAMIC @0")
SKIP = 77
BLOCK_TIMEOUT_S = 300
# What the scenes and the samples' command lines run, besides sbx.
TOOLS = ["unshare", "mount", "umount", "bash", "git", "curl", "jq"]

# The policy files the samples `cat` and use.
DEMO_PROXY_JSON = """\
{"version": 1,
 "filesystem": {"kind": "restricted",
   "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
 "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:18081", "*.debian.org"],
             "denied_domains": ["security.debian.org"]}}
"""
PROJECT_PROXY_JSON = """\
{"version": 1,
 "filesystem": {"kind": "restricted", "protected_names": [],
   "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
 "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:18081"],
   "denied_domains": ["127.0.0.1:18082"]}}
"""
MANAGED_LOCKS_JSON = """\
{"locks": {"network_modes": ["restricted", "proxy"]}}
"""
SRT_SETTINGS_JSON = """\
{"filesystem": {"denyRead": ["~/.ssh"], "allowWrite": ["."]},
 "network": {"allowedDomains": ["github.com"], "httpProxyPort": 8080}}
"""


class Scene:
    """Where a sample's commands run: `cwd` (made empty, `git init` with `git`), `files`
    (path -> text; relative to cwd, `~/` in the home directory, or absolute), extra `env`, and
    the loopback ports that answer HTTP GET with 200 (`serve`)."""

    def __init__(self, cwd, git=False, files=None, env=None, serve=()):
        self.cwd = cwd
        self.git = git
        self.files = files or {}
        self.env = env or {}
        self.serve = tuple(serve)


SCENES = {
    # README.md's tour: a git workspace.
    "demo": Scene("/tmp/demo-ws", git=True,
                  files={"~/proxy.json": DEMO_PROXY_JSON,
                         "~/bad.json": '{"version": 1, "filesystem": {"kind": "restricted", '
                                     '"entries": [{"path": ":root", "access": "writ"}]}}\n'},
                  serve=[18081]),
    # README.md's administrator lock: the managed settings allow no network mode `enabled`.
    "demo-locked": Scene("/tmp/demo-ws", git=True,
                         files={"/etc/sbx/managed.json": MANAGED_LOCKS_JSON}),
    # core/cli/README.md: an empty project, two secrets in the environment (`explain` names
    # what the default policy removes).
    "project": Scene("/tmp/sbx-readme/project",
                     files={"~/proxy.json": PROJECT_PROXY_JSON,
                            "bad.json": '{"version":1,"filesystem":{"kind":"restricted",'
                                        '"entries":[{"path":":root","access":"read"},'
                                        '{"path":":cwd","access":"rw"}]}}\n',
                            "~/.srt-settings.json": SRT_SETTINGS_JSON},
                     env={"GITHUB_TOKEN": "ghp_example", "OPENAI_API_KEY": "sk-example"},
                     serve=[18081]),
}


# ---------------------------------------------------------------------------------------------
# Normalisation: what legitimately differs between hosts of the reference kind.

def shorten(text, width=60):
    """core/cli/text_table.cpp shorten(): how `backends --probe` cuts a long observed value."""
    if len(text) <= width:
        return text
    return text[:width - 3] + "..."


def read_proc_version():
    with open("/proc/version", encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()[0]


def normalise(text, kernel):
    # The bwrap probe's `wsl1` check quotes /proc/version: whole in JSON, cut in the text.
    text = text.replace(kernel, DOC_KERNEL).replace(shorten(kernel), shorten(DOC_KERNEL))
    # curl: "Failed to connect to 127.0.0.1 port 18081 after 0 ms".
    return re.sub(r"\bafter \d+ ms\b", "after 0 ms", text)


# ---------------------------------------------------------------------------------------------
# The documents: marked blocks, their commands and outputs.

MARKER = re.compile(r"^<!-- sample: (\S+) -->$")


class DocError(Exception):
    """A malformed marker or block."""


class SceneError(Exception):
    """This host cannot make a scene (ctest's skip)."""


def command_is_open(text):
    """True while a command typed so far goes on on the next line: it ends with a backslash, or
    a single or double quote is open (bash's own rules for these, nothing more)."""
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif c == "\\":
            if i + 1 == len(text):
                return True
            i += 1
        elif quote == '"':
            if c == '"':
                quote = None
        elif c in "'\"":
            quote = c
        i += 1
    return quote is not None


class Sample:
    """A marked block: lines [first, end) of the document are its body."""

    def __init__(self, path, scene, first, end, commands, separators):
        self.path = path
        self.scene = scene
        self.first = first
        self.end = end
        self.commands = commands  # the commands' text, "$ " removed, lines joined by "\n"
        self.separators = separators  # blank lines after each command's output

    def render(self, outputs):
        lines = []
        for command, output, blank in zip(self.commands, outputs, self.separators):
            lines.append("$ " + command)
            lines.extend(output)
            lines.extend([""] * blank)
        return lines


def parse_body(path, first, body):
    commands, separators = [], []
    i = 0
    while i < len(body):
        if not body[i].startswith("$ "):
            raise DocError(f"{path}:{first + i + 1}: a sample's output comes after a `$ ` line")
        command = [body[i][2:]]
        while command_is_open("\n".join(command)):
            i += 1
            if i == len(body):
                raise DocError(f"{path}:{first + i}: the command goes on past the block's end")
            command.append(body[i])
        i += 1
        output_start = i
        while i < len(body) and not body[i].startswith("$ "):
            i += 1
        blank = 0
        while i - blank > output_start and body[i - 1 - blank] == "":
            blank += 1
        commands.append("\n".join(command))
        separators.append(blank)
    if not commands:
        raise DocError(f"{path}:{first + 1}: a sample has at least one `$ ` line")
    return commands, separators


def find_samples(path, lines):
    samples = []
    for n, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        if m.group(1) not in SCENES:
            raise DocError(f"{path}:{n + 1}: unknown scene '{m.group(1)}' "
                           f"(known: {', '.join(sorted(SCENES))})")
        if n + 1 >= len(lines) or not lines[n + 1].startswith("```"):
            raise DocError(f"{path}:{n + 1}: the sample marker is not followed by a ``` fence")
        end = n + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise DocError(f"{path}:{n + 2}: the sample's fence is never closed")
        commands, separators = parse_body(path, n + 2, lines[n + 2:end])
        samples.append(Sample(path, m.group(1), n + 2, end, commands, separators))
    return samples


# ---------------------------------------------------------------------------------------------
# Running a block: in the parent, one `unshare` per block; in the child, the scene.

def run_sample(sample, prefix, kernel):
    request = json.dumps({"scene": sample.scene, "commands": sample.commands, "prefix": prefix})
    child = subprocess.run(
        ["unshare", "--mount", "--net", "--propagation", "private", "--",
         sys.executable, os.path.abspath(__file__), "--in-scene"],
        input=request, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
    if child.returncode == SKIP:
        raise SceneError(child.stderr.strip())
    if child.returncode != 0:
        raise RuntimeError(f"{sample.path}:{sample.first}: the scene '{sample.scene}' failed "
                           f"(exit {child.returncode}): {child.stderr.strip()}")
    outputs = json.loads(child.stdout)["outputs"]
    return [normalise(o, kernel).rstrip("\n").split("\n") if o.strip("\n") else []
            for o in outputs]


def mount(*args):
    subprocess.run(["mount", *args], check=True)


def mount_points():
    """The mount points of this namespace (proc(5), mountinfo field 5, octal escapes undone)."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        fields = [line.split(" ")[4] for line in f if line.strip()]
    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in fields]


def detach_mounts(directory):
    """Detaches (umount -l, in this private namespace only) every mount at or below
    `directory` before the scene mounts over it. Covered, such a mount would stay in the mount
    table, writable, and sbx-stage2 refuses a writable mount that the policy does not make
    writable (plugins/bwrap/checks/bwrap_checks.cpp, check_mounts); detached, the directory
    shows what lies below the mount."""
    below = directory.rstrip("/") + "/"
    while True:  # one at a time, deepest first: mounts stacked at one path each need their own
        points = [p for p in mount_points() if p == directory or p.startswith(below)]
        if not points:
            return
        subprocess.run(["umount", "-l", max(points, key=lambda p: p.count("/"))], check=True)


def overlay(directory, scratch):
    """Makes `directory` an overlay whose changes land in `scratch` (a tmpfs) and vanish with
    the namespace. The upper directory takes the lower one's owner and mode, which the overlay's
    root shows (the plugin loader and the managed settings check both)."""
    name = directory.strip("/").replace("/", "_")
    upper, work = f"{scratch}/{name}.upper", f"{scratch}/{name}.work"
    os.makedirs(upper)
    os.makedirs(work)
    st = os.stat(directory)
    os.chown(upper, st.st_uid, st.st_gid)
    os.chmod(upper, st.st_mode & 0o7777)
    mount("-t", "overlay", "overlay", "-o",
          f"lowerdir={directory},upperdir={upper},workdir={work}", directory)


def runtime_base():
    """Where root's sbx keeps its per-boot state (sdk/include/sbx/sdk/private_state.hpp,
    runtime_base; the scene sets no XDG_RUNTIME_DIR): /run/user/0 when it is root's own 0700
    directory, else /run."""
    try:
        st = os.lstat("/run/user/0")
        if os.path.isdir("/run/user/0") and not os.path.islink("/run/user/0") and \
                st.st_uid == 0 and st.st_mode & 0o7777 == 0o700:
            return "/run/user/0"
    except FileNotFoundError:
        pass
    return "/run"


def loopback_up():
    """`ip link set lo up` without iproute2: SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP
    (netdevice(7)); a new network namespace starts with lo down."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, siocgifflags, ifreq))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):  # without HTTPServer's getfqdn(): no name lookup on a bare loopback
        socketserver.TCPServer.server_bind(self)


def serve(port):
    server = Server(("127.0.0.1", port), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def write_file(path, text, home, cwd):
    if path.startswith("~/"):
        path = os.path.join(home, path[2:])
    elif not path.startswith("/"):
        path = os.path.join(cwd, path)
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o644)


def set_up_scene(scene, prefix):
    home = pwd.getpwuid(0).pw_dir
    if prefix == "/tmp" or prefix.startswith("/tmp/"):
        raise SceneError(f"the sbx under test ({prefix}) lies in /tmp, which the scene replaces")
    if home in ("", "/"):
        raise SceneError(f"root's home directory is '{home}', which the scene cannot replace")
    loopback_up()
    # /tmp: empty, with the overlays' upper directories in a corner of its own.
    detach_mounts("/tmp")
    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp")
    scratch = "/tmp/.sbx-readme-scene"
    os.makedirs(f"{scratch}/install", mode=0o700)
    mount("--bind", prefix, f"{scratch}/install")
    # The sbx under test at the documentation's prefix.
    detach_mounts("/opt")
    overlay("/opt", scratch)
    os.makedirs(DOC_PREFIX, mode=0o755, exist_ok=True)
    mount("--bind", f"{scratch}/install", DOC_PREFIX)
    subprocess.run(["umount", f"{scratch}/install"], check=True)
    # No managed settings but the scene's.
    if os.path.isdir("/etc/sbx") or any(path.startswith("/etc/") for path in scene.files):
        detach_mounts("/etc")
        overlay("/etc", scratch)
        shutil.rmtree("/etc/sbx", ignore_errors=True)
    # sbx's state of this boot (the bwrap probe's cache, the proxy's directories), empty; made
    # on the host first when missing, as sbx's first run there would.
    for name in ("bwrap", "probe", "proxy"):
        directory = f"{runtime_base()}/sbx-{name}"
        os.makedirs(directory, mode=0o700, exist_ok=True)
        detach_mounts(directory)
        mount("-t", "tmpfs", "-o", "mode=0700", "tmpfs", directory)
    detach_mounts(home)
    mount("-t", "tmpfs", "-o", "mode=0700", "tmpfs", home)
    os.makedirs(scene.cwd, mode=0o755)
    env = {"HOME": home, "LANG": "C.UTF-8", "PATH": f"{DOC_PREFIX}/bin:/usr/bin:/bin",
           **scene.env}
    if scene.git:
        subprocess.run(["git", "init", "-q"], cwd=scene.cwd, env=env, check=True)
    for path, text in scene.files.items():
        write_file(path, text, home, scene.cwd)
    for port in scene.serve:
        serve(port)
    return env


def in_scene():
    """The child: sets the scene up, runs the commands, prints {"outputs": [...]}."""
    request = json.load(sys.stdin)
    scene = SCENES[request["scene"]]
    try:
        env = set_up_scene(scene, request["prefix"])
    except SceneError as e:
        print(f"readme_samples: cannot make the scene here: {e}", file=sys.stderr)
        sys.exit(SKIP)
    # A record separator and the command's index before each command: the split points of the
    # one stream. `$?` is handed on across the marker.
    script = ""
    for i, command in enumerate(request["commands"]):
        script += f"__sbx_status=$?; printf '\\036{i}\\036'; (exit $__sbx_status)\n{command}\n"
    run = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=scene.cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT_S)
    stream = run.stdout.decode("utf-8", errors="replace")
    parts = re.split("\x1e[0-9]+\x1e", stream)
    if len(parts) != len(request["commands"]) + 1 or parts[0]:
        raise RuntimeError(f"the block's bash did not reach every command: {stream!r}")
    json.dump({"outputs": parts[1:]}, sys.stdout)


# ---------------------------------------------------------------------------------------------

def why_not_here():
    if os.geteuid() != 0:
        return "the samples are made as root (mounts in a namespace of their own)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return (f"{', '.join(missing)} missing (cmake/scripts/bootstrap-debian.sh tests "
                f"installs them)")
    return None


def main():
    if sys.argv[1:] == ["--in-scene"]:
        in_scene()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sbx", required=True, help="the installed sbx (PREFIX/bin/sbx)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the samples' output")
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff if stale")
    parser.add_argument("files", nargs="+", help="Markdown files with marked samples")
    args = parser.parse_args()

    why = why_not_here()
    if why:
        print(f"readme_samples: skipped: {why}", file=sys.stderr)
        return SKIP
    sbx = os.path.realpath(args.sbx)
    prefix = os.path.dirname(os.path.dirname(sbx))
    if not os.access(sbx, os.X_OK) or os.path.basename(os.path.dirname(sbx)) != "bin":
        parser.error(f"--sbx {args.sbx}: not an executable PREFIX/bin/sbx")
    kernel = read_proc_version()

    stale = False
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        try:
            samples = find_samples(path, lines)
        except DocError as e:
            print(f"readme_samples: {e}", file=sys.stderr)
            return 2
        new_lines = list(lines)
        for sample in reversed(samples):  # from the end: earlier line numbers stay valid
            try:
                body = sample.render(run_sample(sample, prefix, kernel))
            except SceneError as e:
                print(f"readme_samples: skipped: {e}", file=sys.stderr)
                return SKIP
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"readme_samples: {e}", file=sys.stderr)
                return 2
            new_lines[sample.first:sample.end] = body
        new_text = "\n".join(new_lines)
        if new_text == text:
            print(f"readme_samples: {path}: {len(samples)} samples, fresh")
            continue
        if args.write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new_text)
            print(f"readme_samples: {path}: {len(samples)} samples, rewritten")
        else:
            stale = True
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                fromfile=path, tofile=f"{path} (real output)"))
    if stale:
        print("readme_samples: stale samples; regenerate with --write (HACKING.md, "
              "\"Documentation samples\") and read the diff", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
