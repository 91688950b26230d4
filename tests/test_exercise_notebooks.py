"""The harness: every unfilled exercise notebook runs top to bottom in a fresh kernel
(nbclient), each check says "not attempted yet", and nothing else errors or warns."""

from pathlib import Path

import pytest

from attnlib.cli import check_rows, expected_checks, run_notebook
from attnlib.selfcheck import exercise_ids

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.name)
def test_unfilled_exercise_notebook_says_not_attempted_for_every_check(path):
    nb = run_notebook(path, timeout=60, allow_errors=True)
    problems = [
        f"cell {i + 1}: {out.get('ename') or out.get('name')}: "
        f"{out.get('evalue') or out.get('text', '')[:200]}"
        for i, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if out.output_type == "error" or (out.output_type == "stream" and out.name == "stderr")
    ]
    assert problems == []
    ids, _ = expected_checks(nb)
    assert len(ids) >= 3, f"{path.name} has fewer than three exercises"
    assert set(ids) <= set(exercise_ids()), "a check uses an id no checker registers"
    rows = check_rows(path, nb)
    assert [(r["exercise"], r["message"]) for r in rows] == [
        (i, f"… {i}: not attempted yet") for i in ids
    ]
