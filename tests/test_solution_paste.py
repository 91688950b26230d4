"""solution("id") shows code a learner can paste into the exercise cell: run it with the names
the notebook defines above that cell, and the check must pass. One test for every exercise of
every lesson, found from the solution notebooks' check cells."""

import contextlib
import io

import nbformat
import pytest

from attnlib.selfcheck import check, hint, registry, solution
from tests.checker_cases import ROOT, check_cells


def _cases():
    for stem in registry.LESSONS:
        path = ROOT / "solutions" / f"{stem}.ipynb"
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


def test_every_exercise_is_covered():
    ids = [param.values[2] for param in _cases()]
    assert ids == list(registry.exercises())


def test_mask_weights_hint_uses_the_names_exercise_09_defines(capsys):
    # exercise 10 defines causal, Q, K and d_k above the cell (no mask, no S): the hint that
    # names the mask calls it `causal`, never the undefined `mask`, and stops before the answer
    for _ in range(3):
        hint("mask_weights")
    shown = capsys.readouterr().out
    assert "np.where(causal," in shown
    assert "np.where(mask" not in shown and "S_masked" not in shown
