"""The harness: every unfilled exercise notebook runs top to bottom in a fresh kernel
(nbclient), its check cells are exactly the registry's exercises for that notebook, each
says "not attempted yet", and nothing else errors or writes to stderr."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from attnlib.selfcheck import registry
from tests.checker_cases import ROOT, check_cells

EXERCISES = sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))


def run_notebook(path, timeout=60):
    """Execute a copy of the notebook in a fresh kernel, in its folder; return it."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=timeout, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    return nb


def shown_lines(cell):
    """The text a code cell showed (streams and text/plain results), line by line."""
    text = ""
    for out in cell.get("outputs", []):
        if out.output_type == "stream" and out.name == "stdout":
            text += out.text
        elif out.output_type in ("display_data", "execute_result"):
            text += out.get("data", {}).get("text/plain", "") + "\n"
    return text.splitlines()


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.name)
def test_unfilled_exercise_notebook_says_not_attempted_for_every_check(path: Path):
    nb = run_notebook(path)
    problems = [
        f"cell {i + 1}: {out.get('ename') or out.get('name')}: "
        f"{out.get('evalue') or out.get('text', '')[:200]}"
        for i, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if out.output_type == "error" or (out.output_type == "stream" and out.name == "stderr")
    ]
    assert problems == []
    expected = [e.id for e in registry.for_notebook(path.stem)]
    assert len(expected) >= 3, f"{path.name} has fewer than three exercises"
    cells = check_cells(path)
    assert [exercise_id for _, exercise_id, _ in cells] == expected
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for index, exercise_id, _ in cells:
        assert f"… {exercise_id}: not attempted yet" in shown_lines(code[index]), exercise_id
