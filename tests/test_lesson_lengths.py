"""Lesson lengths (issue 11): at most about 1,100 words of prose, minutes that are computed.

The rule lives in tools/lesson_length.py (its docstring); these tests hold every lesson to
it and keep the minutes columns of README.md and lesson 00 equal to what the tool computes.
After changing a lesson, `python tools/lesson_length.py --write` updates both columns.
"""

import importlib.util
import json
import re

import pytest

from tests.test_notebooks import LESSONS, ROOT

_spec = importlib.util.spec_from_file_location("lesson_length", ROOT / "tools/lesson_length.py")
lesson_length = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lesson_length)

# Lessons owned by another engineer of issue 11 and still being trimmed on their branch.
# strict: the test fails as soon as one of them fits, so the entry must then be removed.
BEING_TRIMMED = {}  # stem -> reason, for a lesson another branch is trimming (strict xfail)


def _marks(path):
    reason = BEING_TRIMMED.get(path.stem)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=_marks(p), id=p.stem) for p in LESSONS]
)  # fmt: skip
def test_lesson_prose_fits_one_sitting(path):
    words, _, _ = lesson_length.measure(path)
    assert words <= lesson_length.HARD_LIMIT, (
        f"{path.name} has {words} words of prose, more than {lesson_length.HARD_LIMIT}: "
        "trim it or move an idea to the lesson that owns it"
    )


def test_the_entries_being_trimmed_are_lessons():
    assert set(BEING_TRIMMED) <= {p.stem for p in LESSONS}


@pytest.mark.parametrize(
    "markdown, words",
    [
        ("one two three", 3),
        ("the scores $S = Q K^\\top$ divided", 3),  # inline math is not prose
        ("$$A = \\mathrm{softmax}(S)$$\nthen", 1),  # display math neither
        ("call `attnlib.softmax(S_scaled)` now", 2),  # nor a code span
        ("```\nmake lab\n```\nrun it", 2),  # nor a fenced block
        ("| lesson | minutes |\n|---|---|\n| 05 | 26 |", 4),  # rules and bars are not words
        ("- a bullet · and a dot", 5),  # the bullet and the dot are not words
    ],
)
def test_prose_words_follows_the_rule(markdown, words):
    assert lesson_length.prose_words(markdown) == words


def test_minutes_add_reading_and_code_cells(tmp_path):
    cells = [{"cell_type": "markdown", "source": ["word " * 250]}]
    cells += [{"cell_type": "code", "source": ["x = 1"]} for _ in range(3)]
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    # 250 words at 100 a minute, plus 1 minute for each of the 3 code cells
    assert lesson_length.measure(path) == (250, 3, 6)


def test_the_colab_install_cell_is_not_lesson_time(tmp_path):
    cells = [{"cell_type": "code", "id": "colab-install", "source": ["import sys"]}]
    cells += [{"cell_type": "markdown", "source": ["word " * 250]}]
    cells += [{"cell_type": "code", "source": ["x = 1"]} for _ in range(3)]
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert lesson_length.measure(path) == (250, 3, 6)


def _minutes_column(rows, pattern):
    found = {}
    for line in rows:
        m = re.search(pattern, line)
        if m:
            found[m.group(1)] = line.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()
    return found


def _expected():
    return {
        name: lesson_length.map_minutes(name, m)
        for name, (_, _, m) in lesson_length.lessons().items()
    }


FIX = "run `python tools/lesson_length.py --write` after changing a lesson"


def test_readme_course_map_gives_the_computed_minutes():
    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- course-map -->")[1].split("<!-- /course-map -->")[0]
    lines = table.splitlines()
    assert lines[1].rstrip().endswith("| minutes (lesson + exercises) |"), "no minutes column"
    found = _minutes_column(lines, r"^\| \[\d\d [^]]*\]\(notebooks/(\d\d_[a-z0-9_]+)\.ipynb\)")
    assert found == _expected(), FIX


def test_lesson_00_course_map_gives_the_computed_minutes():
    cells = json.loads((ROOT / "notebooks/00_start_here.ipynb").read_text())["cells"]
    source = next(
        "".join(c["source"]) for c in cells if "".join(c["source"]).startswith("## Course map")
    )
    found = _minutes_column(source.splitlines(), r"^\| `(\d\d_[a-z0-9_]+)`")
    assert found == _expected(), FIX


def test_every_lesson_was_timed_by_a_reader_and_fits_one_sitting():
    """The course maps show measured minutes (tools/reader_times.py), not the word count's."""
    MEASURED, ONE_SITTING = lesson_length.MEASURED, lesson_length.ONE_SITTING
    stems = [name.split("_", 1)[1] for name in lesson_length.lessons()]
    untimed = [stem for stem in stems if stem not in MEASURED]
    assert untimed == [], f"lessons no reader has timed yet: {untimed}"
    assert sorted(MEASURED) == sorted(stems), "reader_times.py times a lesson that is gone"
    long = {stem: MEASURED[stem][0] for stem in stems if MEASURED[stem][0] > ONE_SITTING}
    assert long == {}, f"longer than one sitting ({ONE_SITTING} minutes) for a reader: {long}"
