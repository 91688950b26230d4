"""Exports without a kernel: exercise points and parts, answer sections, shard selection."""

import json

import numpy as np
import pytest

from attnlib.grade import answers, points, shard
from attnlib.selfcheck import Exercise, registry

from .conftest import ROOT, solved, src


def pair(**fields):
    return Exercise(id="pair", lesson="00_demo", kind="tuple", answer="(a, b)", hints=("h",),
                    solution="", expected=(np.array([1.0, 2.0]), 3.0), **fields)  # fmt: skip


def test_points_and_written_fields_are_checked():
    assert pair().points == 1 and pair().written == "" and not pair().parts
    with pytest.raises(ValueError, match=r"Exercise 'pair': points must be a number >= 0, got -1"):
        pair(points=-1)
    with pytest.raises(ValueError, match=r"written_points must be a number >= 0, got True"):
        pair(written_points=True)
    with pytest.raises(
        ValueError, match="only a tuple or a function exercise has parts, not a value"
    ):
        Exercise(id="v", lesson="00_demo", kind="value", answer="v", hints=("h",), solution="",
                 expected=1.0, parts=True)  # fmt: skip


def test_credit_is_a_fraction_only_where_the_data_says_parts():
    half = ([1.0, 2.0], 4.0)  # the first item right, the second wrong
    assert pair(parts=True).credit(half) == 0.5
    assert pair().credit(half) == 0.0  # no parts: all or nothing
    assert pair(parts=True).credit(([1.0, 2.0], 3.0)) == 1.0
    assert pair(parts=True).credit(...) == 0.0
    assert pair(parts=True).credit("nonsense") == 0.0
    double = Exercise(id="double", lesson="00_demo", kind="function", answer="f", hints=("h",),
                      solution="", cases=((1.0,), (2.0,), (3.0,), (4.0,)),
                      reference=lambda x: 2 * x, parts=True)  # fmt: skip
    records = [{"ok": 2.0}, {"ok": 4.0}, {"ok": 7.0}, {"error": "ValueError: no"}]
    assert double.credit(records) == 0.5


def test_a_row_earns_its_credit_only_for_an_exercise_with_parts():
    row = {"status": "wrong", "credit": 0.5}
    assert points.earned(row, pair(parts=True), 4.0) == 2.0
    assert points.earned(row, pair(), 4.0) == 0.0
    assert points.earned({"status": "passed"}, pair(), 4.0) == 4.0
    assert points.earned({"status": "wrong", "credit": 7}, pair(parts=True), 4.0) == 0.0


def test_the_grader_row_carries_the_credit_of_what_check_recorded():
    from attnlib.grade.notebook import judge_answer
    from attnlib.selfcheck import record, wire

    data = wire.encode(record.answer_data("tuple", None, (), (np.array([1.0, 2.0]), 4.0)))
    row = judge_answer("x.ipynb", pair(parts=True), data)
    assert row["status"] == "wrong" and row["credit"] == 0.5
    assert "credit" not in judge_answer("x.ipynb", pair(), data)  # no parts: no credit


def test_the_course_marks_its_why_exercises_written():
    marked = [e.id for e in registry.exercises().values() if e.written]
    assert len(marked) >= 6 and "double_keys" in marked
    for exercise_id in marked:
        exercise = registry.get(exercise_id)
        assert exercise.kind == "choice" and exercise.written.startswith("Why")


def test_an_answer_is_what_the_student_added_to_the_stub():
    stub = (ROOT / "exercises" / "03_scoring.ipynb").read_bytes()
    ids = [e.id for e in registry.for_notebook("03_scoring")]
    assert all(
        a == {"code": "", "text": ""} for a in answers.collect("03_scoring", stub, ids).values()
    )
    nb = solved()
    for cell in nb["cells"]:  # a student who deleted every heading still has answers
        if cell["cell_type"] == "markdown" and src(cell).startswith("## Exercise"):
            cell["source"] = "notes"
    got = answers.collect("03_scoring", json.dumps(nb).encode(), ids)
    assert "S[i, j] += Q[i, m] * K[j, m]" in got["scores_loop"]["code"]
    assert "K[i, m]" not in got["scores_loop"]["code"]  # the stub's broken loop is not theirs
    assert "one factor of k per product" in got["double_keys"]["text"]
    assert answers.collect("03_scoring", b"\xff not a notebook", ids) == {}


def test_shards_are_disjoint_cover_the_class_and_differ_by_one_at_most():
    groups = [(f"class/s{n:02d}", []) for n in (7, 3, 11, 1, 5, 9, 2)]
    parts = [shard.select(groups, (i, 3)) for i in (1, 2, 3)]
    names = [f for part in parts for f, _ in part]
    assert sorted(names) == sorted(f for f, _ in groups)
    assert sorted(len(p) for p in parts) == [2, 2, 3]
    assert shard.select(groups, None) == groups
    with pytest.raises(ValueError, match=r"--shard: expected i/N such as 2/3, got 'two'"):
        shard.parse("two")
