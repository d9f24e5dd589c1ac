"""Fixtures for the binding's tests: a real libsbx (SBX_LIBRARY / SBX_PREFIX / installed) and a
fresh workspace per test. ctest runs them against the tree the install_tree test installs.

A run that proves nothing exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE in
tests/bindings/CMakeLists.txt) instead of Passed: nothing failed, and every test skipped or one
skipped because there is no libsbx or no sandbox backend to run it (NO_BACKEND)."""
import os
import tempfile

import pytest

import sbx

SKIP_RETURN_CODE = 77
NO_BACKEND = "no sandbox backend: "


def pytest_sessionfinish(session, exitstatus):
    if exitstatus != 0:
        return
    stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
    skipped = [str(report.longrepr) for report in stats.get("skipped", [])]
    if not skipped:
        return
    if not stats.get("passed") or any(NO_BACKEND in reason for reason in skipped):
        print(f"\nctest: SKIPPED (exit {SKIP_RETURN_CODE}), {len(skipped)} test(s) could not run "
              f"here: {skipped[0]}")
        session.exitstatus = SKIP_RETURN_CODE


@pytest.fixture(scope="session")
def lib_path() -> str:
    try:
        return sbx.find_library()
    except sbx.SbxError as error:
        pytest.skip(f"{NO_BACKEND}no libsbx to test against: {error}")


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
        pytest.skip(f"{NO_BACKEND}none is available here: {explained['available_reason']}")
    return explained["final"]


WORKSPACE = {"version": 1, "preset": "workspace-write"}
