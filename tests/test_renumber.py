"""tools/renumber.py on a small course of its own, in a temporary git repository."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import renumber  # noqa: E402
from course_order import ORDER  # noqa: E402


def notebook(*sources):
    cells = [{"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": s}
             for i, s in enumerate(sources)]  # fmt: skip
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1, ensure_ascii=False) + "\n"  # fmt: skip


def course(root, lessons):
    """A git repo with ``lessons`` (number -> stem), each with its three notebooks and checker."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for number, stem in lessons.items():
        text = notebook(f"# {number} · {stem}\n\nSee lesson 02.", "Then open lesson 03.")
        for folder in renumber.LESSON_DIRS:
            (root / folder).mkdir(exist_ok=True)
            (root / folder / f"{number}_{stem}.ipynb").write_text(text)
        (root / "attnlib" / "checkers").mkdir(parents=True, exist_ok=True)
        (root / "attnlib" / "checkers" / f"lesson_{number}.py").write_text(
            f'LESSON = "{number}_{stem}"\n'
        )
    (root / "README.md").write_text(
        "| lesson | minutes |\n|---|---|\n"
        + "".join(
            f"| [{n} {s}](notebooks/{n}_{s}.ipynb) | [{n}](exercises/{n}_{s}.ipynb) |\n"
            for n, s in lessons.items()
        )  # fmt: skip
        + "\nLessons 01 to 03 come first; lessons 01, 02 and 03 too; lesson 02's idea.\n"
        "Dates stay: 2026-01-02, 0.01-0.03, 1.02 to 1.03.\n"
    )
    (root / "registry.py").write_text(
        "LESSONS = (\n" + "".join(f'    "{n}_{s}",\n' for n, s in lessons.items()) + ")\n"
        "from attnlib.checkers import lesson_03  # noqa\n"
        "CASES = [\n    # 03\n    1,\n    # 03: c's cases\n]\n"
    )
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


def test_moves_files_and_rewrites_every_reference_in_one_pass(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "03": "c"})
    # c moves to 01 and a to 03: sequential replaces would turn 01 -> 03 -> ... back again
    renumber.renumber(tmp_path, order=["start", "c", "b", "a", "not_written_yet"], out=print)
    assert sorted(p.name for p in (tmp_path / "notebooks").iterdir()) == [
        "00_start.ipynb", "01_c.ipynb", "02_b.ipynb", "03_a.ipynb"]  # fmt: skip
    assert (tmp_path / "attnlib/checkers/lesson_01.py").read_text() == 'LESSON = "01_c"\n'
    assert (tmp_path / "attnlib/checkers/lesson_03.py").read_text() == 'LESSON = "03_a"\n'
    cells = json.loads((tmp_path / "solutions/03_a.ipynb").read_text())["cells"]
    assert "".join(cells[0]["source"]) == "# 03 · a\n\nSee lesson 02."  # its own number
    assert "".join(cells[1]["source"]) == "Then open lesson 01."  # old 03 is c, now 01
    readme = (tmp_path / "README.md").read_text().splitlines()
    assert readme[3:6] == [
        "| [01 c](notebooks/01_c.ipynb) | [01](exercises/01_c.ipynb) |",
        "| [02 b](notebooks/02_b.ipynb) | [02](exercises/02_b.ipynb) |",
        "| [03 a](notebooks/03_a.ipynb) | [03](exercises/03_a.ipynb) |",
    ]  # rows in the new order
    assert readme[7] == "Lessons 01 to 03 come first; lessons 03, 02 and 01 too; lesson 02's idea."
    assert readme[8] == "Dates stay: 2026-01-02, 0.01-0.03, 1.02 to 1.03."
    registry = (tmp_path / "registry.py").read_text()
    assert '"00_start",\n    "01_c",\n    "02_b",\n    "03_a",\n' in registry
    assert "import lesson_01  # noqa" in registry  # c's checker module
    assert "    # 01\n    1,\n    # 01: c's cases\n" in registry  # a table's lesson labels


def test_a_second_run_changes_nothing(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "03": "c"})
    order = ["start", "c", "a", "b"]
    assert renumber.renumber(tmp_path, order=order, out=lambda line: None)
    before = {
        p: p.read_text() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    assert renumber.renumber(tmp_path, order=order, out=lambda line: None) == []
    after = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before


def test_missing_stems_are_skipped_and_a_new_lesson_takes_its_place(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "90": "new"})
    renumber.renumber(tmp_path, order=["start", "gone", "a", "new", "b"], out=lambda line: None)
    names = sorted(p.name for p in (tmp_path / "exercises").iterdir())
    assert names == ["00_start.ipynb", "01_a.ipynb", "02_new.ipynb", "03_b.ipynb"]


def test_a_range_that_falls_apart_is_left_and_named(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "03": "c", "04": "d"})
    lines = []
    # "lessons 01 to 03" (a, b, c) becomes 01, 03, 04: no longer one range
    renumber.renumber(tmp_path, order=["start", "a", "d", "b", "c"], out=lines.append)
    assert "Lessons 01 to 03 come first" in (tmp_path / "README.md").read_text()
    warning = (
        "check by hand: README.md: range '01 to 03': its lessons are no longer next to each other"
    )
    assert warning in lines


def test_two_lessons_with_one_number_are_refused(tmp_path):
    course(tmp_path, {"00": "start", "01": "a"})
    (tmp_path / "notebooks" / "01_other.ipynb").write_text(notebook("x"))
    with pytest.raises(renumber.RenumberError, match="two lessons share a number .01: a, other"):
        renumber.renumber(tmp_path, order=["start", "a", "other"], out=lambda line: None)


def test_a_lesson_missing_from_the_order_is_refused(tmp_path):
    course(tmp_path, {"00": "start", "01": "a"})
    with pytest.raises(renumber.RenumberError, match="a not in tools/course_order.py's ORDER"):
        renumber.renumber(tmp_path, order=["start"], out=lambda line: None)


def test_the_course_is_in_the_order_of_course_order():
    root = Path(__file__).resolve().parent.parent
    found = renumber.find_lessons(root)
    assert renumber.plan(found, ORDER) == {n: n for n in found.values()}
    assert [s for s in ORDER if s in found] == sorted(found, key=found.get)


def test_an_exercise_number_keeps_its_part(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "03": "c"})
    (tmp_path / "notes.md").write_text(
        "See exercise 03.2, exercises 02.1 and 03.4, 0.02.\nLessons 02 (b) and 03 (c, not 02).\n"
    )
    renumber.renumber(tmp_path, order=["start", "c", "a", "b"], out=lambda line: None)
    assert (
        (tmp_path / "notes.md").read_text()
        == "See exercise 01.2, exercises 03.1 and 01.4, 0.02.\nLessons 03 (b) and 01 (c, not 02).\n"
    )


def test_a_new_lesson_inside_a_range_widens_it(tmp_path):
    course(tmp_path, {"00": "start", "01": "a", "02": "b", "03": "c", "90": "new"})
    renumber.renumber(tmp_path, order=["start", "a", "new", "b", "c"], out=lambda line: None)
    assert "Lessons 01 to 04 come first" in (tmp_path / "README.md").read_text()


@pytest.mark.parametrize("kind", ["notebooks", "solutions"])
def test_each_lesson_ends_by_pointing_to_the_next_one(kind):
    # the renumbering moves files, not the sentences that say what comes next
    root = Path(__file__).resolve().parent.parent
    paths = sorted((root / kind).glob("[0-9][0-9]_*.ipynb"))
    for here, after in zip(paths, paths[1:] + [None], strict=True):
        last = "".join(json.loads(here.read_text())["cells"][-1]["source"])
        named = set(re.findall(r"(\d\d_[a-z0-9_]+)\.ipynb", last)) - {here.stem}
        assert named == ({after.stem} if after else set()), f"{here.name} points to {named}"
