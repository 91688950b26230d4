"""solution("id") for exercises 01-06 shows code a learner can paste into the exercise cell:
run it with the names the notebook defines above that cell, and the check must pass."""

import contextlib
import io

import nbformat
import pytest

from attnlib.selfcheck import check, registry, solution
from tests.checker_cases import ROOT, check_cells


def _cases():
    for path in sorted(ROOT.glob("solutions/0[1-6]_*.ipynb")):
        for index, exercise_id, answer in check_cells(path):
            yield pytest.param(path, index, exercise_id, answer, id=exercise_id)


@pytest.mark.parametrize(("path", "index", "exercise_id", "answer"), list(_cases()))
def test_shown_solution_runs_in_its_exercise(path, index, exercise_id, answer):
    cells = [c.source for c in nbformat.read(path, 4).cells if c.cell_type == "code"]
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        for source in cells[:index]:  # what the notebook defines above the exercise cell
            exec(source, namespace)
        shown.truncate(0)
        shown.seek(0)
        solution(exercise_id)
    code = shown.getvalue().split("\n", 1)[1]  # after "solution for <id>:"
    exec(code, namespace)  # a NameError or SyntaxError here is a solution a learner can't paste
    assert check(exercise_id, eval(answer, namespace), quiet=True).passed


def test_every_exercise_01_06_is_covered():
    ids = [exercise_id for param in _cases() for exercise_id in param.values[2:3]]
    assert ids == [e.id for stem in registry.LESSONS[:6] for e in registry.for_notebook(stem)]
