"""Shared pytest setup for the course's tests.

The real-browser tests in tests/browser/ start JupyterLab and Chromium, so plain
`make test` leaves them out; `make test-browser` runs them (it sets
ATTNLIB_BROWSER=1).
"""

import os

import numpy as np
import pytest

collect_ignore = [] if os.environ.get("ATTNLIB_BROWSER") == "1" else ["browser"]


@pytest.fixture(autouse=True)
def _restore_print_options():
    """Some tests run notebook cells, which set numpy's print options for the whole process;
    put them back so a later doctest prints as its docstring says."""
    with np.printoptions():
        yield
