"""The harness: `attnlib check exercises/` grades every unfilled exercise notebook in a
fresh kernel, exits 1, says "not attempted" for every exercise of the course, and no cell
raises."""

import json
from pathlib import Path

import pytest

from attnlib.cli import main
from attnlib.selfcheck import registry

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["check", "--json", "-q", "-j", "2", str(ROOT / "exercises")])
    return status, json.loads(out.getvalue())


def test_unfilled_exercises_exit_1_and_every_exercise_is_not_attempted(report):
    status, found = report
    assert status == 1
    assert [(r["exercise"], r["status"], r["message"]) for r in found["rows"]] == [
        (i, "not attempted", f"… {i}: not attempted yet") for i in registry.exercises()
    ]
    assert found["unknown_ids"] == {}


def test_no_cell_of_an_unfilled_exercise_notebook_raises(report):
    assert report[1]["cell_errors"] == {}


@pytest.mark.parametrize("stem", registry.LESSONS)
def test_every_exercise_notebook_has_at_least_three_exercises(stem):
    assert (ROOT / "exercises" / f"{stem}.ipynb").exists()
    assert len(registry.for_notebook(stem)) >= 3
