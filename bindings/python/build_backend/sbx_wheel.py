"""A PEP 517 build backend with no dependencies (standard library only).

Why: pip builds in an isolated environment and would download setuptools for it; a machine
without network (or a CI that must not use one) could not `pip install ./bindings/python`.
This package is pure Python, so a wheel is a zip of src/sbx plus the metadata PEP 427 and the
core metadata spec ask for; this module writes exactly that. Name and version are read from
pyproject.toml ([project]); the package files are every file under src/sbx.
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib  # Python 3.11+
except ImportError:  # pragma: no cover - older Pythons read the two keys below by hand
    tomllib = None

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = os.path.join(_ROOT, "src", "sbx")


def _project():
    path = os.path.join(_ROOT, "pyproject.toml")
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    project, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[project]" and "=" in line:
                key, value = (part.strip() for part in line.split("=", 1))
                if value.startswith('"'):
                    project[key] = value.strip('"')
    return project


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}", f"Summary: {project.get('description', '')}"]
    license_text = project.get("license", {})
    if isinstance(license_text, dict) and "text" in license_text:
        lines.append(f"License: {license_text['text']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    readme = os.path.join(_ROOT, "README.md")
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            return "\n".join(lines) + "\n\n" + f.read()
    return "\n".join(lines) + "\n"


def _package_files():
    for directory, subdirs, files in os.walk(_PACKAGE):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(directory, name)
            yield full, os.path.relpath(full, os.path.dirname(_PACKAGE)).replace(os.sep, "/")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, editable=False):
    project = _project()
    name, version = project["name"].replace("-", "_"), project["version"]
    dist_info = f"{name}-{version}.dist-info"
    filename = f"{name}-{version}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        def add(arcname, data):
            wheel.writestr(zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0)), data)
            records.append(_record_line(arcname, data))

        if editable:
            add(f"__editable__.{name}.pth", (os.path.dirname(_PACKAGE) + "\n").encode())
        else:
            for full, arcname in _package_files():
                with open(full, "rb") as f:
                    add(arcname, f.read())
        add(f"{dist_info}/METADATA", _metadata(project).encode())
        add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: sbx_wheel\n"
                                  b"Root-Is-Purelib: true\nTag: py3-none-any\n")
        add(f"{dist_info}/top_level.txt", b"sbx\n")
        records.append(f"{dist_info}/RECORD,,")
        wheel.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)),
                       "\n".join(records) + "\n")
    return filename


# -- PEP 517 / PEP 660 hooks -------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = f"{project['name']}-{project['version']}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for relative in ("pyproject.toml", "README.md", "build_backend/sbx_wheel.py"):
            sdist.add(os.path.join(_ROOT, relative), f"{base}/{relative}")
        for full, arcname in _package_files():
            sdist.add(full, f"{base}/src/{arcname}")
        pkg_info = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return filename
