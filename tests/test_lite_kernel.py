"""What the course does differently in the browser (JupyterLite, Pyodide), tested here.

Pyodide reports ``sys.platform == "emscripten"`` and has an ``os.fork`` that fails with
ENOSYS. These tests pretend to be there: the self-check must call a learner's function in
this process (never fork), with a one-line note that there is no time limit; the setup
check in lesson 00 must recognise the browser and say what differs. The real thing runs in
Chromium in tests/test_lite.py (``make test-lite``).
"""

import errno
import os
import sys

import numpy as np
import pytest

from attnlib import setup_check
from attnlib.selfcheck import check, run
from attnlib.setup_check import BROWSER_REQUIRED, check_setup, verdict


@pytest.fixture
def browser(monkeypatch):
    """Pretend to be Pyodide: its platform, and an os.fork that fails as Pyodide's does."""

    def fork():
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(sys, "platform", "emscripten")
    monkeypatch.setattr(os, "fork", fork, raising=False)
    monkeypatch.setattr(run, "_noted", [])


def test_in_the_browser_a_function_is_called_here_and_the_note_is_printed_once(browser, capsys):
    def loud_double(x):
        print("the learner's own print")
        return x * 2

    records = run.call_cases(loud_double, [(np.array([1.0, 2.0]),), (3,)])
    assert [type(r["ok"]) for r in records] == [np.ndarray, int]
    np.testing.assert_array_equal(records[0]["ok"], [2.0, 4.0])
    assert records[1] == {"ok": 6}
    assert run.call_cases(lambda: 1 / 0, [()]) == [{"error": "ZeroDivisionError: division by zero"}]
    out = capsys.readouterr().out
    assert out == run.NO_TIME_LIMIT + "\n"  # once, and the learner's prints go nowhere
    assert "no time limit" in out and "\n" not in out.rstrip("\n")


def test_in_the_browser_sys_exit_ends_only_the_calls(browser):
    def leave(x):
        sys.exit(3)

    records = run.call_cases(leave, [(1,), (2,)])
    assert records[0] == {"exit": 3}
    assert records[1]["error"].startswith("not run: your function ended the process")


def test_in_the_browser_check_grades_a_function_right_and_wrong(browser, capsys):
    def scores_loop(Q, K):
        S = np.zeros((Q.shape[0], K.shape[0]))
        for i in range(Q.shape[0]):
            for j in range(K.shape[0]):
                for m in range(Q.shape[1]):  # the dot product as the exercise's loop
                    S[i, j] += Q[i, m] * K[j, m]
        return S

    assert check("scores_loop", scores_loop).passed
    assert not check("scores_loop", lambda Q, K: Q @ Q.T).passed
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == run.NO_TIME_LIMIT
    assert lines[1].startswith("✓ scores_loop") and lines[2].startswith("✗ scores_loop")


def test_the_browser_is_recognised_and_says_what_differs(browser):
    assert setup_check.in_browser() and not setup_check.on_colab()
    found, report = check_setup()
    assert [name for name, _ in found] == [name for name, _ in BROWSER_REQUIRED]
    assert "jupyterlab" not in dict(found)  # the page is the front end
    assert report.startswith("in the browser (JupyterLite")
    for words in ("nothing to install", "browser's storage", "File > Download", "no time limit"):
        assert words in report, words
    assert report.splitlines()[-1] == "setup check (browser): all 6 packages found"
    assert verdict(found) == "setup check (browser): all 6 packages found"


def test_in_the_browser_a_missing_package_gets_the_browser_fix(browser, monkeypatch):
    from importlib import metadata

    real = metadata.version

    def version(name):
        if name == "ipywidgets":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(setup_check.metadata, "version", version)
    found, report = check_setup()
    assert "ipywidgets     MISSING" in report
    assert verdict(found).splitlines() == [
        "setup check (browser): 1 of 6 packages not ready: ipywidgets is missing",
        setup_check.BROWSER_FIX,
    ]


def test_off_the_browser_nothing_changes():
    assert sys.platform != "emscripten" and not setup_check.in_browser()
    found, report = check_setup()
    assert "browser" not in report
    assert len(run.call_cases(lambda: 1, [()])) == 1
