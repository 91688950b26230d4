"""One test over every exercise of the course, from the registry: the reference answer
passes, the stub says "not attempted", and each declared mistake is named with its own code
(a mistake shadowed by an earlier one, or declared with the wrong code, fails here).

The answers go through ``check`` exactly as a notebook sends them: values through the wire,
functions through a child process. The registry must match the notebooks' check cells.
"""

import json
import re

import numpy as np
import pytest

from attnlib.selfcheck import MISTAKES, check, contract, registry
from attnlib.selfcheck.exercise import Exercise
from tests.checker_cases import ROOT, check_cells

EXERCISES = list(registry.exercises().values())


def _id(exercise):
    return exercise.id


def reference_answer(exercise):
    """What a learner who solved the exercise passes to ``check``: for a function, the
    solution's own code (the reference computes the expected values, and may break the
    exercise's constraints, e.g. blocked_causal's reference is one query at a time)."""
    if exercise.kind == "function":
        text = exercise.solution_text()
        if exercise.constraints and text.startswith(f"def {exercise.answer}("):
            namespace = {"np": np}
            exec(text, namespace)
            return namespace[exercise.answer]
        return exercise.reference
    if exercise.dtype is not None:  # an exercise about a precision: answered in that dtype
        return np.asarray(exercise.expected).astype(exercise.dtype)
    return exercise.expected


def stub_answer(exercise):
    """What the unsolved exercise notebook passes: ``...``, or a function returning it."""
    if exercise.kind == "function":
        return lambda *args: ...
    if exercise.kind == "tuple":
        return tuple(... for _ in exercise.expected)
    return ...


def declared_mistakes(exercise):
    """(code, the answer that makes it) for every mistake the exercise declares."""
    if exercise.kind == "choice":
        return [(code, option) for option, code in exercise.mistakes]
    if exercise.kind == "tuple":
        found = []
        for position, pairs in exercise.mistakes:
            for code, value in pairs:
                answer = list(exercise.expected)
                answer[position] = value
                found.append((code, tuple(answer)))
        return found
    streams = [rule.count for rule in exercise.constraints if isinstance(rule, contract.Stream)]
    if streams:  # the answer takes a stream of rows; the mistake, the arrays
        return [(code, _from_stream(value, *streams)) for code, value in exercise.mistakes]
    return [(code, value) for code, value in exercise.mistakes if value is not None]


def _from_stream(mistake, count):
    """An answer that gathers its stream of rows into arrays and makes ``mistake``."""

    def answer(steps, *rest):
        arrays = [np.array(rows) for rows in zip(*steps, strict=True)]
        return mistake(*arrays, *rest)

    return answer


MISTAKE_CASES = [
    pytest.param(exercise, code, answer, id=f"{exercise.id}-{k}-{code}")
    for exercise in EXERCISES
    for k, (code, answer) in enumerate(declared_mistakes(exercise))
]


@pytest.mark.parametrize("exercise", EXERCISES, ids=_id)
def test_reference_answer_passes(exercise):
    feedback = check(exercise.id, reference_answer(exercise), quiet=True)
    assert (feedback.passed, feedback.status) == (True, "passed"), feedback.message
    assert feedback.message == f"✓ {exercise.id}: correct."


@pytest.mark.parametrize("exercise", EXERCISES, ids=_id)
def test_stub_is_not_attempted(exercise):
    feedback = check(exercise.id, stub_answer(exercise), quiet=True)
    assert feedback.status == "not attempted", feedback.message
    assert feedback.message == f"… {exercise.id}: not attempted yet"


@pytest.mark.parametrize(("exercise", "code", "answer"), MISTAKE_CASES)
def test_each_declared_mistake_is_named_with_its_own_code(exercise, code, answer):
    feedback = check(exercise.id, answer, quiet=True)
    assert (feedback.status, feedback.mistake) == ("wrong", code), feedback.message
    assert feedback.message == f"✗ {exercise.id}: wrong ({code}): {MISTAKES[code]}"


@pytest.mark.parametrize("stem", registry.LESSONS)
def test_registry_matches_the_check_cells_of_both_notebooks(stem):
    declared = [(e.id, e.answer) for e in registry.for_notebook(stem)]
    for folder in ("exercises", "solutions"):
        cells = check_cells(ROOT / folder / f"{stem}.ipynb")
        assert [(i, answer) for _, i, answer in cells] == declared, folder


def test_registry_is_the_course_in_order_and_ids_are_unique():
    stems = sorted(p.stem for p in (ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))
    assert list(registry.LESSONS) == stems
    ordered = [e.id for stem in registry.LESSONS for e in registry.for_notebook(stem)]
    assert ordered == list(registry.exercises())  # every exercise in exactly one lesson
    assert len(set(ordered)) == len(ordered)
    assert registry.for_notebook("00_start_here") == ()
    assert registry.get("rank_witness").lesson == "03_scoring"
    assert registry.get("nope") is None and registry.get(3) is None


def test_every_mistake_code_is_used_and_every_hint_is_written_once():
    used = set()
    for exercise in EXERCISES:
        if exercise.kind == "choice":
            used |= {code for _, code in exercise.mistakes}
        elif exercise.kind == "tuple":
            used |= {code for _, pairs in exercise.mistakes for code, _ in pairs}
        else:
            used |= {code for code, _ in exercise.mistakes}
    assert used == set(MISTAKES)
    assert len(set(MISTAKES.values())) == len(MISTAKES)
    for path in (ROOT / "attnlib" / "checkers").glob("*.py"):  # hints live in mistakes.py
        text = path.read_text(encoding="utf-8")
        assert not [code for code, hint in MISTAKES.items() if hint[:40] in text], path.name


def test_an_exercise_is_refused_when_its_data_is_wrong():
    base = dict(id="x1", lesson="01_words_to_vectors", answer="x", hints=("h",), solution="s")
    with pytest.raises(ValueError, match="not in mistakes.py"):
        Exercise(kind="value", expected=1.0, mistakes={"no_such_code": 2.0}, **base)
    with pytest.raises(ValueError, match="kind 'number'"):
        Exercise(kind="number", **base)
    with pytest.raises(ValueError, match="needs at least one hint"):
        Exercise(kind="value", **{**base, "hints": ()})
    with pytest.raises(ValueError, match="needs cases and a reference"):
        Exercise(kind="function", **base)
    with pytest.raises(ValueError, match="id must be a name"):
        Exercise(kind="value", **{**base, "id": "two words"})


@pytest.mark.parametrize("stem", registry.LESSONS)
def test_every_exercise_heading_names_its_ids_in_order(stem):
    cells = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    headings = [
        "".join(c["source"]).split("\n", 1)[0]
        for c in cells
        if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Exercise ")
    ]
    named = [i for h in headings for i in re.findall(r"`(\w+)`", h.rsplit("(id", 1)[-1])]
    assert all("(id" in h for h in headings), headings
    assert named == [e.id for e in registry.for_notebook(stem)]
