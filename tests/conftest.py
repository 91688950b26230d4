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
# `make test` runs pytest over both cores (pytest-xdist, --dist loadgroup). The tests that run
# the grader go to one worker, in order: one of them plants a file in the installed package,
# which any grader running meanwhile in another worker would rightly report as tampering,
# and their module fixtures grade a whole class once per worker that uses them.
ONE_WORKER = {"grader": ("tests/grader/", "tests/test_check_cli.py", "tests/test_proof_kind.py")}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        for group, prefixes in ONE_WORKER.items():
            if where.startswith(prefixes):
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _restore_print_options():
    """Some tests run notebook cells, which set numpy's print options for the whole process;
    put them back so a later doctest prints as its docstring says."""
    with np.printoptions():
        yield
