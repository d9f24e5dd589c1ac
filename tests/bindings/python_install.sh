#!/usr/bin/env bash
# python.install: `pip install ./bindings/python` into a fresh venv of Debian's python3, with no
# network at all (a new network namespace: pip could not reach an index even if it tried).
# usage: python_install.sh PYTHON SOURCE_DIR VENV
set -euo pipefail
python=$1 source=$2 venv=$3
rm -rf "$venv"
# --system-site-packages: the tests use Debian's pytest, and Debian's pip installs into the venv
# (python -m pip from inside it; seeding the venv with its own pip costs ~10-60 s); sbx itself
# comes from the wheel.
"$python" -m venv --without-pip --system-site-packages "$venv"
pip=("$venv/bin/python" -m pip)
cd "$source"
if [[ $(id -u) -eq 0 ]] && unshare --net true 2>/dev/null; then
  echo "pip install ./bindings/python, in a network namespace without any interface up"
  unshare --net "${pip[@]}" install --disable-pip-version-check --no-cache-dir ./bindings/python
else
  echo "NOTE: cannot make a network namespace here (not root): installing without it"
  "${pip[@]}" install --disable-pip-version-check --no-cache-dir ./bindings/python
fi
"$venv/bin/python" -c 'import sbx, os; print("installed", sbx.__file__)'
site=$("$venv/bin/python" -c 'import sbx, os; print(os.path.dirname(sbx.__file__))')
[[ "$site" == "$venv"/* ]] || { echo "FAIL: sbx imported from $site, not the venv" >&2; exit 1; }
[[ -f "$site/py.typed" ]] || { echo "FAIL: py.typed not installed" >&2; exit 1; }
# The licence travels in the wheel's metadata (the tree's LICENSE: Apache-2.0).
license=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.metadata("sbx")["License"])')
[[ "$license" == "Apache-2.0" ]] || { echo "FAIL: the wheel's License is '$license'" >&2; exit 1; }
