"""Gradescope: build the autograder zip, and the program it runs for each submission.

``attnlib gradescope build autograder.zip --lessons 03_scoring 05_softmax`` writes a zip
with, at its root (the layout Gradescope's autograder expects):

- ``setup.sh``: installs Python, bubblewrap (for the grader's sandbox, where the image
  allows it) and the course from the copy in the zip (``course/``) into a venv;
- ``run_autograder``: runs :func:`run` (``python -m attnlib.grade.gradescope``);
- ``course/``: the course package, its ``pyproject.toml`` and the handed-out stubs
  (``exercises/``, for the answer extraction);
- ``config.json``: the lessons the assignment asks for, the points file's table and the
  tests' visibility.

For each submission, :func:`run` grades the notebooks found in
``$AUTOGRADER_ROOT/submission`` (default ``/autograder``; the notebooks at its top level,
or in one folder below) with ``attnlib check``'s own grader and writes
``$AUTOGRADER_ROOT/results/results.json``::

    {"score": 4.0, "stdout_visibility": "hidden",
     "tests": [{"name": "03_scoring: scores_loop", "score": 1.0, "max_score": 1.0,
                "output": "Correct.", "visibility": "visible"}, ...]}

one test per exercise of the asked lessons (0 points and "not handed in" when a notebook is
missing), scored as ``--gradebook`` scores them, with the feedback page's line
(:func:`attnlib.grade.feedback.explain`: the named mistake and the first hint, never the
expected value). The grader's own output goes to stdout, which Gradescope shows only to
instructors (``stdout_visibility: hidden``).
"""

import io
import json
import os
import shutil
import stat
import sys
import zipfile
from pathlib import Path

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Choose Gradescope's Ubuntu 22.04 base image or newer: the course needs Python 3.10+.
set -euo pipefail
CONSTRAINTS=/autograder/source/course/attnlib/grade/gradescope-constraints.txt
apt-get update
apt-get install -y python3 python3-venv python3-pip bubblewrap util-linux || \\
  apt-get install -y python3 python3-venv python3-pip util-linux
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "setup.sh: $(python3 --version) is older than 3.10: choose Ubuntu 22.04 or newer" >&2
  exit 1
}
python3 -m venv /autograder/venv
# the versions the course was tested with (tools/gradescope_constraints.py): a rebuild of
# the image installs the same numpy, so the same verdicts
/autograder/venv/bin/pip install -c "$CONSTRAINTS" /autograder/source/course
"""
RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission, write results.json.
# AUTOGRADER_ROOT (default /autograder) lets a test run it in a folder of its own.
export AUTOGRADER_ROOT="${AUTOGRADER_ROOT:-/autograder}"
export ATTNLIB_TEMPLATES="$AUTOGRADER_ROOT/source/course/exercises"
exec "$AUTOGRADER_ROOT/venv/bin/python" -m attnlib.grade.gradescope
"""
COURSE_FILES = ("pyproject.toml", "README.md", "LICENSE")
CONSTRAINTS = "attnlib/grade/gradescope-constraints.txt"  # tools/gradescope_constraints.py


class BuildError(ValueError):
    """The zip cannot be built as asked."""


def _course_root():
    import attnlib

    return Path(attnlib.__file__).resolve().parent.parent


def _add(zf, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build(out, lessons=None, points_file=None, visibility="visible", require_sandbox=False):
    """Write the autograder zip; return the names in it. The same inputs give the same bytes."""
    from attnlib.selfcheck import registry

    from . import points

    lessons = list(lessons or registry.LESSONS)
    unknown = [s for s in lessons if s not in registry.LESSONS]
    if unknown:
        raise BuildError(f"--lessons: {unknown} are not lessons of the course.")
    if visibility not in VISIBILITIES:
        raise BuildError(f"visibility must be one of {VISIBILITIES}, got {visibility!r}.")
    try:
        table = points.load(points_file, registry) if points_file else None
    except points.PointsError as err:
        raise BuildError(str(err)) from None
    root = _course_root()
    config = {"lessons": lessons, "points": table, "visibility": visibility}
    if require_sandbox:
        config["require_sandbox"] = True
    files = [("setup.sh", SETUP, True), ("run_autograder", RUN, True)]
    files.append(("config.json", json.dumps(config, indent=1, sort_keys=True) + "\n", False))
    sources = [root / name for name in COURSE_FILES if (root / name).is_file()]
    sources += sorted(p for p in (root / "attnlib").rglob("*.py"))
    sources.append(root / CONSTRAINTS)
    sources += sorted((root / "exercises").glob("*.ipynb"))
    for path in sources:
        files.append(("course/" + path.relative_to(root).as_posix(), path.read_bytes(), False))
    with zipfile.ZipFile(out, "w") as zf:
        for name, data, executable in files:
            _add(zf, name, data, executable)
    return [name for name, _, _ in files]


def _notebooks_folder(submission):
    """The submission folder, or its one subfolder that holds the notebooks."""
    submission = Path(submission)
    if any(p.suffix == ".ipynb" for p in submission.iterdir() if p.is_file()):
        return submission
    below = [d for d in sorted(submission.iterdir()) if d.is_dir() and not d.is_symlink()]
    with_notebooks = [d for d in below if any(d.glob("*.ipynb"))]
    return with_notebooks[0] if len(with_notebooks) == 1 else submission


def results(report, registry, lessons, visibility="visible"):
    """The ``results.json`` data from a scored report of one submission."""
    from .feedback import explain
    from .gradebook import column_name

    rows = {r["exercise"]: r for r in report["rows"]}
    by_column = {c["exercise"]: c for c in report["points"]["columns"]}
    tests = []
    for exercise in registry.exercises().values():
        if exercise.lesson not in lessons or exercise.id not in by_column:
            continue
        column = by_column[exercise.id]
        if column["points"] <= 0:
            continue
        row = rows.get(exercise.id)
        if row is None:
            score, output = 0.0, f"{exercise.lesson}.ipynb was not handed in."
        else:
            score, output = row["points"], explain(row, exercise)
        tests.append(
            {
                "name": column_name(column),
                "score": score,
                "max_score": column["points"],
                "output": output,
                "visibility": visibility,
            }
        )
    problems = [r for r in report["rows"] if r["exercise"] == "(notebook)"]
    for r in problems:
        name = Path(r["notebook"]).name
        tests.append(
            {
                "name": f"{name}: the whole notebook",
                "score": 0.0,
                "max_score": 0.0,
                "output": r["message"],
                "visibility": visibility,
            }
        )
    return {
        "score": round(sum(t["score"] for t in tests), 6),
        "stdout_visibility": "hidden",
        "tests": tests,
    }


REQUIRE_ENV = "ATTNLIB_REQUIRE_SANDBOX"  # "1": grade nothing where no sandbox can be made


def protect(root):
    """Make the answer key and the results folder root's alone; return what was protected.

    Run before any student code: the course copy (``ROOT/source``, with the checkers and
    the points), the installed course package and ``ROOT/results`` become mode 0700, so a
    kernel running as another uid can neither read an expected value nor write a result.
    """
    from .sandbox import installed_package

    protected = []
    package = Path(installed_package())
    # setup.sh installs into ROOT/venv; a package elsewhere (a developer's checkout) is
    # left as it is, and the log says so
    inside = package.resolve().is_relative_to(root.resolve())
    for path in (root / "source", *([package] if inside else []), root / "results"):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)
            protected.append(str(path))
    return protected


def isolation(report, protected):
    """The instructor's line saying which isolation held for this submission."""
    detail = report.get("sandbox_detail", "not recorded")
    if report.get("sandbox"):
        return f"isolation: sandbox ({detail})"
    if report.get("run_as"):
        uids = ", ".join(map(str, report["run_as"]))
        return (
            f"isolation: NO SANDBOX ({detail}); the kernel ran as uid {uids}, not root; "
            f"readable and writable by root only: {', '.join(protected)}; every process of "
            "that uid was killed before results.json was written"
        )
    return (
        f"isolation: NONE ({detail}); the kernel ran as this user (uid {os.geteuid()}), "
        "who can read the answer key: grade as root (Gradescope does) or with bubblewrap"
    )


def _refusal(message):
    return {
        "score": 0.0,
        "stdout_visibility": "hidden",
        "output": message,
        "tests": [],
    }


def run(root=None):
    """Grade ``ROOT/submission`` and write ``ROOT/results/results.json``; return its data.

    As root without a sandbox (a container that refuses namespaces), the kernel runs as
    an unprivileged uid that can read neither the answer key nor the results folder
    (:func:`protect`), and ``results.json`` is written by this process after every process
    of that uid has been killed; stdout (the instructor's log) says which isolation held.
    With ``require_sandbox`` in ``config.json`` (``attnlib gradescope build
    --require-sandbox``) or ``ATTNLIB_REQUIRE_SANDBOX=1``, nothing is graded where no
    sandbox can be made.
    """
    from attnlib.selfcheck import registry

    from . import GraderError, grade, points, text_report

    root = Path(root or os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    config_path = root / "source" / "config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    lessons = config.get("lessons") or list(registry.LESSONS)
    visibility = config.get("visibility", "visible")
    required = bool(config.get("require_sandbox")) or os.environ.get(REQUIRE_ENV) == "1"
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    target = out / "results.json"
    if target.exists() or target.is_symlink():
        target.unlink()  # nothing from before this run stands
    protected = protect(root) if os.geteuid() == 0 else []
    try:
        folder = _notebooks_folder(root / "submission")
        report = grade([str(folder)], jobs=1, require_sandbox=required, unprivileged=True)
        table = config.get("points") or {"points": {}, "written": {}}
        for stem in lessons:  # every asked lesson is a column, handed in or not
            for exercise in registry.for_notebook(stem):
                table["points"].setdefault(exercise.id, float(exercise.points))
        points.score(report, registry, table)
        data = results(report, registry, lessons, visibility)
        buffer = io.StringIO()
        text_report(report, out=buffer)
        print(buffer.getvalue())  # for the instructor (stdout is hidden from students)
        print(isolation(report, protected))
    except (GraderError, OSError) as err:
        print(f"attnlib gradescope: {err}")
        if required:
            print(f"isolation: refused to grade without a sandbox ({REQUIRE_ENV} or config)")
        data = _refusal(
            "The grader could not run on this submission; your instructor has been shown why."
        )
    # the kernel's uid has no process left (grade killed them all): this file is ours
    temporary = out / f".results-{os.getpid()}.json"
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, target)
    return data


def install_files(zip_path, root):
    """Unpack a built zip as Gradescope does (into ``ROOT/source``), keeping modes (tests)."""
    source = Path(root) / "source"
    shutil.rmtree(source, ignore_errors=True)
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            mode = info.external_attr >> 16
            if mode & stat.S_IXUSR:
                target.chmod(0o755)
    return source


if __name__ == "__main__":
    run()
    sys.exit(0)
