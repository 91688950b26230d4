"""``--gradebook grades.csv``: one row per student, the class's columns, then totals.

Three sets of columns (``--gradebook-columns``):

- ``lesson`` (default): one column per lesson, its exercises' points summed: one LMS
  assignment per lesson (about 25 for the course instead of about 120);
- ``exercise``: one column per exercise (``03_scoring: scores_loop``);
- ``total``: one column, ``Exercises``, every exercise's points summed.

A written answer is scored by a teacher (:mod:`attnlib.grade.written`) and has columns of
its own, empty until scored: ``<lesson>: <id> (written)`` per exercise, ``<lesson>
(written)`` per lesson, ``Written answers`` for the total. An empty cell is *not graded*
to an LMS, and the totals here count a written answer only once scored: a student who
passed every exercise has 100 % while their written answers wait.

Two layouts (``--gradebook-layout``), both UTF-8 CSV with a header row, one row per
student folder (in the report's order), numbers written with up to 3 decimals:

``canvas`` (default), what Canvas's *Import* of a gradebook reads::

    Student,ID,SIS User ID,SIS Login ID,Section,03_scoring,...,Final Points,Final Score
    Points Possible,,,,,4,...,,
    alice,,,alice,,4,...,5,100

Canvas matches a row to a student by ``ID``, ``SIS User ID`` or ``SIS Login ID``; the
grader knows only the folder's name, written as ``Student`` and ``SIS Login ID`` (name
folders by login, or pass ``--roster`` to fill the other columns). Each column is a new
assignment on import (or an existing one whose name matches); ``Points Possible`` is the
second row, as Canvas's own export writes it. ``Final Points`` and ``Final Score`` (a
percentage) are read-only columns of Canvas's export, which its import ignores: the
totals are there for you, not as an extra assignment.

``moodle``, what Moodle's *Import grades from CSV file* reads: ``Username`` (the folder's
name, or the roster's), ``ID number`` and ``Email address`` (from the roster, else empty),
then the columns, ``Total points`` and ``Total percent``; no points row (Moodle would
read it as a student). On import choose *Map from: Username*, *Map to: username* and map
each column to a grade item (or *New grade item*; Ignore for the totals).

Every text cell (a name, a roster's entry) goes through :func:`attnlib.grade.safe.cell`:
a folder called ``=HYPERLINK(...)`` is written ``'=HYPERLINK(...)``, a byte that is not
UTF-8 as ``\\xNN``; a student whose row cannot be made is written with empty cells and
marked in the report (``export_notes``), and the gradebook is written for the others.

A roster (``--roster roster.csv``) is a CSV with a ``folder`` column (the folder's name)
and any of ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``,
``Username``, ``ID number``, ``Email address``.
"""

import csv
import io
from pathlib import Path

from . import safe
from .points import folder_of

LAYOUTS = ("canvas", "moodle")
COLUMNS = ("lesson", "exercise", "total")
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


def columns(report, per="lesson"):
    """``[(name, [(exercise id, written?), ...], possible), ...]``: the gradebook's columns."""
    if per not in COLUMNS:
        raise GradebookError(f"gradebook: columns must be one of {COLUMNS}, got {per!r}.")
    found = {}  # name -> (parts, possible), in course order
    for c in report["points"]["columns"]:
        for written, worth in ((False, c["points"]), (True, c["written"])):
            if worth <= 0:
                continue
            if per == "exercise":
                name = column_name(c, written)
            elif per == "lesson":
                name = c["lesson"] + (" (written)" if written else "")
            else:
                name = "Written answers" if written else "Exercises"
            parts, possible = found.get(name, ([], 0.0))
            found[name] = ([*parts, (c["exercise"], written)], possible + worth)
    if per == "total":  # the automatic column first, as in the other sets
        found = dict(sorted(found.items(), key=lambda kv: kv[0] == "Written answers"))
    return [(name, parts, possible) for name, (parts, possible) in found.items()]


def table(report, layout="canvas", roster=None, per="lesson"):
    """The gradebook as a list of rows (lists of str), header first."""
    if layout not in LAYOUTS:
        raise GradebookError(f"gradebook: layout must be one of {LAYOUTS}, got {layout!r}.")
    cols = columns(report, per)
    ids = CANVAS_IDS if layout == "canvas" else MOODLE_IDS
    totals = (
        ("Final Points", "Final Score") if layout == "canvas" else ("Total points", "Total percent")
    )
    lines = [[*ids, *(safe.cell(name) for name, *_ in cols), *totals]]
    if layout == "canvas":
        lines.append(["Points Possible", *[""] * (len(ids) - 1)])
        lines[-1] += [number(possible) for *_, possible in cols] + ["", ""]
    earned = {}
    for r in report["rows"]:
        if "points" in r:
            earned[(folder_of(r), r["exercise"])] = r["points"]
    roster = roster or {}
    for folder in report["by_folder"]:
        person = roster.get(Path(folder).name, {})
        try:
            line = _student(report, folder, layout, person, cols, earned)
        except Exception as err:  # one student's row, never the class's gradebook
            note(report, "gradebook", folder, f"{type(err).__name__}: {err}")
            line = [safe.cell(Path(folder).name)] + [""] * (len(lines[0]) - 1)
        lines.append(line)
    return lines


def _student(report, folder, layout, person, cols, earned):
    """One student's row; every text cell through :func:`attnlib.grade.safe.cell`."""
    points, name = report["points"], Path(folder).name
    if layout == "canvas":
        who = [person.get("Student") or name, person.get("ID", ""), person.get("SIS User ID", "")]
        who += [person.get("SIS Login ID") or name, person.get("Section", "")]
    else:
        who = [
            person.get("Username") or name,
            person.get("ID number", ""),
            person.get("Email address", ""),
        ]
    written_scores = points["written"].get(folder, {})
    cells = []
    for _, parts, _ in cols:
        if all(written for _, written in parts):  # empty until a teacher scored one
            got = [written_scores[i] for i, _ in parts if i in written_scores]
            cells.append(number(sum(got)) if got else "")
        else:
            cells.append(number(sum(earned.get((folder, i), 0.0) for i, _ in parts)))
    mine = points["by_folder"].get(folder, {"earned": 0.0, "possible": 0.0})
    total = mine["earned"]
    percent = 100 * total / mine["possible"] if mine["possible"] else 0.0
    return [*map(safe.cell, who), *cells, number(total), number(percent)]


def note(report, export, folder, reason):
    """Mark one student's part of an export that could not be written as the others."""
    report.setdefault("export_notes", []).append(
        {"export": export, "folder": safe.text(folder), "note": safe.text(reason)[:300]}
    )


def write(report, path, layout="canvas", roster=None, per="lesson"):
    """Write the gradebook CSV (``\\r\\n`` line ends, as the csv module and spreadsheets do)."""
    out = io.StringIO()
    csv.writer(out).writerows(table(report, layout, roster, per))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(out.getvalue().encode("utf-8"))
