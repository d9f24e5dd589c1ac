"""unittest's main for ctest: a run that proves nothing is reported as skipped, not passed.

ctest registers each TestCase class with SKIP_RETURN_CODE 77 (tests/cli/CMakeLists.txt). When
no test failed, the exit status is 77 (ctest: "Skipped") if every test of the run skipped, or
if any test skipped because no sandbox backend can run here (a reason starting with
NO_BACKEND): a host without a backend must not show these suites as passed. Failures and
errors still exit 1, whatever skipped."""

import sys
import unittest

SKIP_RETURN_CODE = 77
NO_BACKEND = "no sandbox backend: "


def skip_no_backend(test, why):
    """Skips `test` because no backend can run it here; the whole ctest entry shows Skipped."""
    test.skipTest(NO_BACKEND + why)


def _whole_test_skips(result):
    # A skip inside subTest() names the subtest (it has .test_case), not the whole test.
    return [test for test, _ in result.skipped if not hasattr(test, "test_case")]


def main():
    program = unittest.main(verbosity=2, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    backend_skips = [reason for _, reason in result.skipped if reason.startswith(NO_BACKEND)]
    if backend_skips:
        print(f"ctest: SKIPPED, {len(backend_skips)} test(s) need a sandbox backend: "
              f"{backend_skips[0]}")
        sys.exit(SKIP_RETURN_CODE)
    if result.testsRun == 0 or len(_whole_test_skips(result)) >= result.testsRun:
        print("ctest: SKIPPED, no test of this run ran")
        sys.exit(SKIP_RETURN_CODE)
    sys.exit(0)
