"""No hint gives the answer away: ``hint`` teaches a step, ``solution`` alone shows the answer.

For every exercise in the registry, no hint may contain

- its expected value in a form a learner would see: a number rounded to the exercise's
  decimals (or to 2 to 4 decimals), an integer, a fraction ``p/q``; an array's row, or a
  tuple, written out as a run of numbers; a choice's option in quotes or as a word;
- a line of its reference answer: the code between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` in ``solutions/*.ipynb`` that the handed-out stub does not already
  hold, and the lines of the exercise's ``solution`` text (an assignment's right-hand side
  counts too).
"""

import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from attnlib.selfcheck import registry

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.^])(?:-?\d+(?:\.\d+)?(?:e-?\d+)?|True|False)(?![\w^])")
CHECK = re.compile(r"""\bcheck\(\s*["'](\w+)["']""")
TRIVIAL = {0.0, 1.0, -1.0}  # a hint says "sums to 1" or "weight 0" without giving anything
MIN_LINE = 12  # a shorter line (``return A @ V``) says little on its own
MIN_PART = 14  # nor does a short right-hand side (``K.shape[-1]``) inside a longer answer


def _code(line):
    """A code line without its comment and spaces, ``1.0`` written ``1`` (as a hint may)."""
    line = line.split("#", 1)[0]
    line = re.sub(r"(\d)\.0\b", r"\1", line)
    return re.sub(r"\s+", "", line).replace('"', "'")


def _cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in nb["cells"]
        if c["cell_type"] == "code"
    ]


def _solution_blocks():
    """``{exercise id: [code line, ...]}``: each BEGIN/END block goes to the next check."""
    found = {}
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        stub_path = ROOT / "exercises" / path.name
        stub = {_code(line) for cell in _cells(stub_path) for line in cell.split("\n")}
        pending = []
        for cell in _cells(path):
            inside = False
            for line in cell.split("\n"):
                if "### BEGIN SOLUTION" in line:
                    inside = True
                elif "### END SOLUTION" in line:
                    inside = False
                elif inside and _code(line) not in stub:
                    pending.append(line)
                elif not inside and pending and CHECK.search(line):
                    found.setdefault(CHECK.search(line).group(1), []).extend(pending)
                    pending = []
    return found


SOLUTION_LINES = _solution_blocks()


_NOT_ANSWER = ("def", "import", "from", "...", "pass")


def _forbidden_code(exercise):
    """Code a hint must not hold: whole lines of the reference answer, and their right sides."""
    lines = SOLUTION_LINES.get(exercise.id, []) + exercise.solution_text().split("\n")
    lines = [code for code in map(_code, lines) if code and not code.startswith(_NOT_ANSWER)]
    lines = list(dict.fromkeys(lines))
    forms = set()
    for code in lines:
        forms |= {code, code.removeprefix("return")}
        match = re.fullmatch(r"[\w\[\],:.()]+?(?<![<>=!])=(?!=)(.+)", code)
        if match:  # an assignment: its right-hand side is the answer too
            part = match.group(1)
            forms.add(part if len(lines) == 1 or len(part) >= MIN_PART else "")
    return {form for form in forms if len(form) >= MIN_LINE or (len(lines) == 1 and form)}


def _scalars(value):
    """The plain numbers a learner would write down for ``value`` (None for non-numbers)."""
    if isinstance(value, (bool, np.bool_)):
        return []
    if isinstance(value, (int, float, np.integer, np.floating)):
        return [float(value)]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size == 1:
        return [float(value.reshape(-1)[0])]
    if isinstance(value, (tuple, list)):
        return [x for item in value for x in _scalars(item)]
    return []


def _entries(value):
    """Every number of ``value``, arrays' entries included."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return [float(x) for x in value.reshape(-1)]
    if isinstance(value, (tuple, list)):
        return [x for item in value for x in _entries(item)]
    return _scalars(value)


def _runs(value):
    """Runs of numbers a learner would see: each row of an array, a tuple of numbers."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size > 1:
        rows = np.atleast_2d(value.astype(float)).reshape(-1, value.shape[-1])
        return [list(row) for row in rows if len(row) > 1]
    if isinstance(value, (tuple, list)):
        flat = _scalars(value)
        found = [flat] if len(flat) > 1 and len(flat) == len(value) else []
        return found + [run for item in value for run in _runs(item)]
    return []


def _decimals(text):
    return len(text.split(".")[1].split("e")[0]) if "." in text else 0


def _same(written, x, decimals):
    """True when the number ``written`` in a hint is ``x`` as a learner would write it."""
    h = float(written)
    if x == int(x):
        return h == x and "e" not in written
    k = _decimals(written)
    return k >= min(decimals or 2, 2) and round(x, k) == h


def _fractions(x):
    f = Fraction(x).limit_denominator(64)
    if f.denominator == 1 or abs(float(f) - x) > 1e-12:
        return []
    return [f"{f.numerator}/{f.denominator}", f"{f.numerator} / {f.denominator}"]


def leaks(exercise, hint):
    """What of the answer ``hint`` gives away, as a list of reasons (empty: none)."""
    found = []
    expected = exercise.expected if exercise.kind in ("value", "tuple", "choice") else None
    written = NUMBER.findall(hint)  # True and False count as 1 and 0, as in a mask
    for x in _scalars(expected):
        if x in TRIVIAL or not np.isfinite(x):
            continue
        if any(_same(w, x, exercise.decimals) for w in written if w[0] not in "TF"):
            found.append(f"the expected number {x:g}")
    for x in _entries(expected):
        found += [f"the fraction {f}" for f in _fractions(x) if f in hint]
    numbers = [float({"True": 1, "False": 0}.get(w, w)) for w in written]
    for run in _runs(expected):
        step = 10.0 ** -(exercise.decimals or 3)
        for start in range(len(numbers) - len(run) + 1):
            window = numbers[start : start + len(run)]
            if all(abs(a - b) <= step for a, b in zip(window, run, strict=True)):
                found.append(f"the expected run {run}")
    if exercise.kind == "choice" and isinstance(expected, str):
        if re.search(rf"(?<![\w-]){re.escape(expected)}(?![\w-])", hint, re.IGNORECASE):
            found.append(f"the expected option {expected!r}")
    squeezed = _code(hint)
    found += [
        f"the solution's code {form!r}" for form in _forbidden_code(exercise) if form in squeezed
    ]
    return found


EXERCISES = registry.exercises()


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_no_hint_contains_the_answer(exercise_id):
    exercise = EXERCISES[exercise_id]
    told = {i + 1: leaks(exercise, hint) for i, hint in enumerate(exercise.hints)}
    assert not {i: why for i, why in told.items() if why}, told


def test_every_solution_block_belongs_to_an_exercise():
    assert SOLUTION_LINES, "no ### BEGIN SOLUTION block was read"
    assert set(SOLUTION_LINES) <= set(EXERCISES)


@pytest.mark.parametrize(
    ("exercise_id", "hint"),
    [
        ("gpt_predict_first_loss", "The first loss is about 2.485."),  # rounded value
        ("scaling_birds_eat", "It comes to 6.36."),
        ("cost_doubling", "growth_full = 4, growth_blocked = 2"),  # a tuple's members
        ("rank_witness", "z = (-0.5, -0.5, 1)"),  # an array as a run
        ("is_causal_mask", "Row 1 is [True, True, False, False]."),  # a boolean row
        ("rank_witness", "z_1 = -1/2"),  # a fraction
        ("double_keys", "Every score is doubled."),  # a choice's option
        ("softmax", "return e / e.sum(axis=-1, keepdims=True)"),  # a solution line
        ("query_key_matrix", "It is W_Q @ W_K.T."),  # a one-line answer's expression
    ],
)
def test_the_rule_refuses_an_answer_written_into_a_hint(exercise_id, hint):
    assert leaks(EXERCISES[exercise_id], hint)
