"""Fixtures for the binding's tests: a real libsbx (SBX_LIBRARY / SBX_PREFIX / installed) and a
fresh workspace per test. ctest runs them against the tree the install_tree test installs."""
import os
import tempfile

import pytest

import sbx


@pytest.fixture(scope="session")
def lib_path() -> str:
    try:
        return sbx.find_library()
    except sbx.SbxError as error:
        pytest.skip(f"no libsbx to test against: {error}")


@pytest.fixture()
def s(lib_path):
    with sbx.Sbx(lib_path) as handle:
        yield handle


@pytest.fixture()
def workspace():
    # Not under the source tree: the policy's :cwd becomes writable for the command.
    with tempfile.TemporaryDirectory(prefix="sbx-pytest-", dir="/tmp") as tmp:
        yield os.path.realpath(tmp)


@pytest.fixture()
def backend(s, workspace):
    """The backend a workspace-write run uses here, or a skip saying why there is none."""
    explained = s.explain(WORKSPACE, cwd=workspace)
    if explained["final"] == "none":
        pytest.skip(f"no sandbox backend is available here: {explained['available_reason']}")
    return explained["final"]


WORKSPACE = {"version": 1, "preset": "workspace-write"}
