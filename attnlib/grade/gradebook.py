"""``--gradebook grades.csv``: one row per student, one column per exercise, then totals.

Two layouts, both UTF-8 CSV with a header row, one row per student folder (in the
report's order), numbers written with up to 3 decimals:

``canvas`` (default), what Canvas's *Import* of a gradebook reads::

    Student,ID,SIS User ID,SIS Login ID,Section,03_scoring: scores_loop,...,Final Points,Final Score
    Points Possible,,,,,1,...,,
    alice,,,alice,,1,...,5,100

Canvas matches a row to a student by ``ID``, ``SIS User ID`` or ``SIS Login ID``; the
grader knows only the folder's name, written as ``Student`` and ``SIS Login ID`` (name
folders by login, or pass ``--roster`` to fill the other columns). Each exercise column
is a new assignment on import (or an existing one whose name matches); ``Points
Possible`` is the second row, as Canvas's own export writes it. ``Final Points`` and
``Final Score`` (a percentage) are read-only columns of Canvas's export, which its import
ignores: the totals are there for you, not as an extra assignment.

``moodle``, what Moodle's *Import grades from CSV file* reads: ``Username`` (the folder's
name, or the roster's), ``ID number`` and ``Email address`` (from the roster, else empty),
then the exercise columns, ``Total points`` and ``Total percent``; no points row (Moodle
would read it as a student). On import choose *Map from: Username*, *Map to: username*
and map each column to a grade item (or *New grade item*; Ignore for the totals).

A written answer adds a column ``<lesson>: <id> (written)`` right after its exercise,
from the teacher's written-scores file (empty when not scored yet).

A roster (``--roster roster.csv``) is a CSV with a ``folder`` column (the folder's name)
and any of ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``,
``Username``, ``ID number``, ``Email address``.
"""

import csv
import io
from pathlib import Path

from .points import folder_of

LAYOUTS = ("canvas", "moodle")
CANVAS_IDS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDS = ("Username", "ID number", "Email address")


class GradebookError(ValueError):
    """The roster or the layout cannot be used."""


def number(value):
    """``3``, ``2.5``, ``0.333``: at most 3 decimals, no trailing zeros."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def load_roster(path):
    """``{folder name: {column: value}}`` from a roster CSV with a ``folder`` column."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise GradebookError(f"roster {path}: cannot be read ({err}).") from None
    if not rows or "folder" not in rows[0]:
        raise GradebookError(f"roster {path}: needs a 'folder' column (the folder's name).")
    return {row["folder"]: row for row in rows}


def column_name(exercise, written=False):
    return f"{exercise['lesson']}: {exercise['exercise']}" + (" (written)" if written else "")


def table(report, layout="canvas", roster=None):
    """The gradebook as a list of rows (lists of str), header first."""
    if layout not in LAYOUTS:
        raise GradebookError(f"gradebook: layout must be one of {LAYOUTS}, got {layout!r}.")
    points = report["points"]
    cols = []  # (name, exercise id, written?, possible)
    for c in points["columns"]:
        if c["points"] > 0:
            cols.append((column_name(c), c["exercise"], False, c["points"]))
        if c["written"] > 0:
            cols.append((column_name(c, True), c["exercise"], True, c["written"]))
    earned = {}
    for r in report["rows"]:
        if "points" in r:
            earned[(folder_of(r), r["exercise"])] = r["points"]
    ids = CANVAS_IDS if layout == "canvas" else MOODLE_IDS
    totals = (
        ("Final Points", "Final Score") if layout == "canvas" else ("Total points", "Total percent")
    )
    lines = [[*ids, *(name for name, *_ in cols), *totals]]
    if layout == "canvas":
        lines.append(["Points Possible", *[""] * (len(ids) - 1)])
        lines[-1] += [number(possible) for *_, possible in cols] + ["", ""]
    roster = roster or {}
    for folder in report["by_folder"]:
        name = Path(folder).name
        person = roster.get(name, {})
        if layout == "canvas":
            who = [
                person.get("Student") or name,
                person.get("ID", ""),
                person.get("SIS User ID", ""),
            ]
            who += [person.get("SIS Login ID") or name, person.get("Section", "")]
        else:
            who = [
                person.get("Username") or name,
                person.get("ID number", ""),
                person.get("Email address", ""),
            ]
        cells = []
        for _, exercise_id, written, _ in cols:
            if written:
                value = points["written"].get(folder, {}).get(exercise_id)
                cells.append("" if value is None else number(value))
            else:
                cells.append(number(earned.get((folder, exercise_id), 0.0)))
        total = points["by_folder"].get(folder, {"earned": 0.0})["earned"]
        percent = 100 * total / points["possible"] if points["possible"] else 0.0
        lines.append([*who, *cells, number(total), number(percent)])
    return lines


def write(report, path, layout="canvas", roster=None):
    """Write the gradebook CSV (``\\r\\n`` line ends, as the csv module and spreadsheets do)."""
    out = io.StringIO()
    csv.writer(out).writerows(table(report, layout, roster))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(out.getvalue().encode("utf-8"))
