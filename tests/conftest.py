"""Shared pytest setup for the course's tests.

The real-browser tests in tests/browser/ start JupyterLab and Chromium, so plain
`make test` leaves them out; `make test-browser` runs them (it sets
ATTNLIB_BROWSER=1).
"""

import os

collect_ignore = [] if os.environ.get("ATTNLIB_BROWSER") == "1" else ["browser"]
