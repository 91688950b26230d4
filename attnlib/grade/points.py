"""Points: what each exercise is worth, and what each student earned, from the report.

Each exercise carries ``points`` (default 1) and, when it asks *why*, ``written_points``
in its data (:class:`attnlib.selfcheck.Exercise`). An instructor's file overrides them,
TOML or JSON, with ids from the course::

    # points.toml                        # points.json
    [points]                             {"points": {"scores": 2, "softmax": 3},
    scores = 2                            "written": {"double_keys": 2}}
    softmax = 3
    rank_witness = 0    # not counted
    [written]
    double_keys = 2

A passed exercise earns its points; any other status earns none, except for an
exercise whose data says it has ``parts`` and whose row carries the grader's
``credit`` (the fraction of its items or cases that were right,
:meth:`~attnlib.selfcheck.Exercise.credit`). Written answers earn what the teacher
typed into the written-scores file (:mod:`attnlib.grade.written`).

The *columns* of a class are the exercises of every lesson that anyone handed in, in
course order, plus any exercise the instructor's file gives points, minus those worth 0:
a student who handed in nothing for a lesson gets 0 for its exercises, not a gap.
"""

import json
import math
from pathlib import Path


class PointsError(ValueError):
    """An instructor's points file or written-scores file cannot be used."""


def _number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PointsError(f"{where} must be a number, got {value!r}.")
    if value < 0:
        raise PointsError(f"{where} must be 0 or more, got {value!r}.")
    return float(value)


def _toml():
    """The TOML reader: tomllib from Python 3.11 on, else tomli if installed."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ValueError(
                "a TOML points file needs Python 3.11 or newer (or the tomli package); "
                "write it as JSON instead"
            ) from None
    return tomllib


def load(path, registry):
    """Read an instructor's points file: ``{"points": {id: n}, "written": {id: n}}``.

    A file with neither table is read as ``{id: n}`` for ``points``. Every id must be
    an exercise of the course, and every written id an exercise marked ``written``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else _toml().loads(text)
    except (OSError, ValueError) as err:
        raise PointsError(f"points file {path}: cannot be read ({err}).") from None
    if not isinstance(data, dict):
        raise PointsError(f"points file {path}: expected a table of exercise ids.")
    if not ({"points", "written"} & set(data)):
        data = {"points": data}
    unknown = set(data) - {"points", "written"}
    if unknown:
        raise PointsError(f"points file {path}: unknown tables {sorted(unknown)}.")
    known = registry.exercises()
    table = {"points": {}, "written": {}}
    for part, values in data.items():
        if not isinstance(values, dict):
            raise PointsError(f"points file {path}: [{part}] must map exercise ids to numbers.")
        for exercise_id, value in values.items():
            if exercise_id not in known:
                raise PointsError(f"points file {path}: {exercise_id!r} is not an exercise.")
            if part == "written" and not known[exercise_id].written:
                raise PointsError(
                    f"points file {path}: {exercise_id!r} has no written answer to give points to."
                )
            table[part][exercise_id] = _number(value, f"points file {path}: {part}.{exercise_id}")
    return table


def worth(exercise, table=None):
    """``(points, written points)`` of one exercise, the instructor's file first."""
    table = table or {"points": {}, "written": {}}
    points = table["points"].get(exercise.id, float(exercise.points))
    written = table["written"].get(exercise.id, float(exercise.written_points))
    return points, (written if exercise.written else 0.0)


def folder_of(row):
    """The student folder of a report row (the notebook's folder)."""
    return str(Path(row["notebook"]).parent)


def columns(report, registry, table=None):
    """``[(exercise, points, written points), ...]`` of the class, in course order."""
    table = table or {"points": {}, "written": {}}
    matched = report.get("matched", {})  # "03_scoring (1).ipynb" graded as 03_scoring
    stems = {matched.get(r["notebook"]) or Path(r["notebook"]).stem for r in report["rows"]}
    listed = {i for part in table.values() for i, v in part.items() if v > 0}
    found = []
    for exercise in registry.exercises().values():
        if exercise.lesson in stems or exercise.id in listed:
            points, written = worth(exercise, table)
            if points > 0 or written > 0:
                found.append((exercise, points, written))
    return found


def earned(row, exercise, points):
    """Points one row earns (see the module docstring)."""
    if row["status"] == "passed":
        return points
    credit = row.get("credit")
    if exercise.parts and isinstance(credit, (int, float)) and 0 <= credit <= 1:
        return points * float(credit)
    return 0.0


def score(report, registry, table=None, written_scores=None):
    """Add points to the report (in place, and returned).

    Every row gets ``points`` and ``max_points``; ``report["points"]`` holds the
    columns, what each column is worth (``possible``: all of them, written answers
    included) and each folder's earned and possible totals, where a written answer
    counts only once scored (``written_scores``, ``{(folder, id): n}``): a student who
    passed every exercise and whose written answers are not read yet has 100 %.
    """
    cols = columns(report, registry, table)
    by_id = {exercise.id: (exercise, points) for exercise, points, _ in cols}
    written_scores = written_scores or {}
    grid = {folder: {} for folder in report["by_folder"]}
    for r in report["rows"]:
        exercise, points = by_id.get(r["exercise"], (None, 0.0))
        r["max_points"] = points
        r["points"] = earned(r, exercise, points) if exercise is not None else 0.0
        if exercise is not None:
            grid.setdefault(folder_of(r), {})[r["exercise"]] = r["points"]
    possible = sum(points + written for _, points, written in cols)
    automatic = sum(points for _, points, _ in cols)
    folders = {}
    for folder, cells in grid.items():
        scored = [(e.id, w) for e, _, w in cols if w > 0 and (folder, e.id) in written_scores]
        got = sum(cells.values()) + sum(written_scores[(folder, i)] for i, _ in scored)
        # a written answer counts once a teacher scored it, not before (no 89.474 for 100)
        folders[folder] = {"earned": got, "possible": automatic + sum(w for _, w in scored)}
    report["points"] = {
        "columns": [
            {"exercise": e.id, "lesson": e.lesson, "points": p, "written": w} for e, p, w in cols
        ],
        "possible": possible,
        "by_folder": folders,
        "written": {
            folder: {i: v for (f, i), v in sorted(written_scores.items()) if f == folder}
            for folder in sorted({f for f, _ in written_scores})
        },
    }
    return report
