#!/usr/bin/env python3
"""A package registry stand-in on loopback for the toolchain-cache tests: one npm package, one
Python wheel and one crate (a sparse cargo index), made here, served over plain HTTP on
127.0.0.1 only (never the internet).

Usage: registry.py DIR
Writes the port to DIR/port once it listens, and appends "GET /path" for every request to
DIR/requests.log (flushed at once), so a test can tell whether a run downloaded anything.
Every answer carries Cache-Control: max-age=3600 so that pip's HTTP cache keeps it."""
import base64
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile
import threading
import zipfile

NPM_NAME = "sbx-demo-pkg"
NPM_VERSION = "1.0.0"
WHEEL = "sbx_demo-1.0-py3-none-any.whl"
CRATE = "sbxdemo"
CRATE_VERSION = "0.1.0"


def npm_tarball():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in (("package/package.json",
                            json.dumps({"name": NPM_NAME, "version": NPM_VERSION,
                                        "main": "index.js"})),
                           ("package/index.js", "module.exports = 'sbx-demo 42';\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def wheel():
    files = {
        "sbx_demo.py": b"VALUE = 42\n",
        "sbx_demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sbx-demo\nVersion: 1.0\n",
        "sbx_demo-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "sbx_demo-1.0.dist-info/RECORD,,\n"
    files["sbx_demo-1.0.dist-info/RECORD"] = record.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def crate():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in (("Cargo.toml", f'[package]\nname = "{CRATE}"\nversion = "{CRATE_VERSION}"\n'
                                          'edition = "2021"\n'),
                           ("src/lib.rs", "pub const VALUE: u32 = 42;\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"{CRATE}-{CRATE_VERSION}/{name}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def main():
    state = sys.argv[1]
    tarball = npm_tarball()
    wheel_bytes = wheel()
    crate_bytes = crate()
    log_lock = threading.Lock()
    log = open(os.path.join(state, "requests.log"), "a", encoding="utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, body, kind):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "public, max-age=3600")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            with log_lock:
                log.write(f"GET {self.path}\n")
                log.flush()
            port = self.server.server_address[1]
            base = f"http://127.0.0.1:{port}"
            path = self.path.split("?")[0]
            tgz = f"/{NPM_NAME}/-/{NPM_NAME}-{NPM_VERSION}.tgz"
            if path == f"/{NPM_NAME}":
                integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
                meta = {"name": NPM_NAME, "dist-tags": {"latest": NPM_VERSION},
                        "versions": {NPM_VERSION: {
                            "name": NPM_NAME, "version": NPM_VERSION,
                            "dist": {"tarball": base + tgz,
                                     "shasum": hashlib.sha1(tarball).hexdigest(),
                                     "integrity": integrity}}}}
                self.answer(json.dumps(meta).encode(), "application/json")
            elif path == tgz:
                self.answer(tarball, "application/octet-stream")
            elif path in ("/simple/sbx-demo/", "/simple/sbx-demo"):
                digest = hashlib.sha256(wheel_bytes).hexdigest()
                html = (f'<!DOCTYPE html><html><body><a href="{base}/files/{WHEEL}#sha256='
                        f'{digest}">{WHEEL}</a></body></html>')
                self.answer(html.encode(), "text/html")
            elif path == f"/files/{WHEEL}":
                self.answer(wheel_bytes, "application/octet-stream")
            elif path == "/cargo/index/config.json":
                self.answer(json.dumps({"dl": base + "/cargo/dl"}).encode(), "application/json")
            elif path == f"/cargo/index/{CRATE[:2]}/{CRATE[2:4]}/{CRATE}":
                entry = {"name": CRATE, "vers": CRATE_VERSION, "deps": [],
                         "cksum": hashlib.sha256(crate_bytes).hexdigest(), "features": {},
                         "yanked": False}
                self.answer((json.dumps(entry) + "\n").encode(), "text/plain")
            elif path == f"/cargo/dl/{CRATE}/{CRATE_VERSION}/download":
                self.answer(crate_bytes, "application/octet-stream")
            else:
                body = b"not found"
                self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(os.path.join(state, "port.tmp"), "w", encoding="utf-8") as out:
        out.write(str(server.server_address[1]))
    os.rename(os.path.join(state, "port.tmp"), os.path.join(state, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()
