"""Shared pytest setup for the course's tests.

The real-browser tests in tests/browser/ start JupyterLab and Chromium, so plain
`make test` leaves them out; `make test-browser` runs them (it sets
ATTNLIB_BROWSER=1).
"""

import os
from pathlib import Path

import numpy as np
import pytest

collect_ignore = [] if os.environ.get("ATTNLIB_BROWSER") == "1" else ["browser"]

ROOT = Path(__file__).resolve().parent.parent
# `make test` runs pytest over both cores (pytest-xdist, --dist loadgroup). The files that run
# the grader each stay on one worker (their module fixtures grade a whole class once).
ONE_WORKER = (
    "tests/grader/test_hostile_class.py",
    "tests/grader/test_exports_attacks.py",
    "tests/grader/test_class_report.py",
    "tests/grader/test_capture_and_assert.py",
    "tests/test_check_cli.py",
    "tests/test_proof_kind.py",
)
# These plant a file in the installed package, which a grader running meanwhile in another
# worker would rightly report as tampering: marked `alone`, left out of the parallel run
# (-m "not alone") and run by themselves after it (`make test` does both).
ALONE = (
    "tests/grader/test_package_guard.py",
    "tests/test_selfcheck.py::test_a_file_dropped_into_the_checkers_folder_is_never_read",
)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Mark the items before any other plugin sees them (-m selects by mark, pytest-xdist
    groups by it)."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        if where.startswith(ONE_WORKER):
            item.add_marker(pytest.mark.xdist_group(where))
        test_id = f"{where}::{item.name}"
        if any(test_id.startswith(prefix) for prefix in ALONE):
            item.add_marker(pytest.mark.alone)
    return (yield)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown when xdist is off
def pytest_xdist_node_collection_finished(node, ids):
    """Stop the run if pytest-xdist's --dist loadgroup lost the groups (the worker writes
    ``@group`` into each grouped id): each file in ONE_WORKER would then grade its class once
    per worker, silently doubling the slowest tests, as with pytest 9.2 (pytest-xdist
    issue 1386)."""
    if node.config.getoption("dist") != "loadgroup":
        return
    lost = [i for i in ids if i.startswith(ONE_WORKER) and "@" not in i]
    if lost:
        pytest.exit(
            f"pytest-xdist --dist loadgroup did not group {len(lost)} tests (first: {lost[0]}) "
            f"under pytest {pytest.__version__}; pytest 9.2 drops the groups (pytest-xdist "
            "issue 1386), so pyproject.toml asks for pytest < 9.2, which `make test` installs",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


@pytest.fixture(autouse=True)
def _restore_print_options():
    """Some tests run notebook cells, which set numpy's print options for the whole process;
    put them back so a later doctest prints as its docstring says."""
    with np.printoptions():
        yield
