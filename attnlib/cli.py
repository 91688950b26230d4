"""The ``attnlib`` command line: tools for maintainers, learners and instructors.

``attnlib execute PATH...`` runs notebooks top to bottom in a fresh kernel and
stores their outputs (the step before committing a changed lesson).
``attnlib exercises`` regenerates ``exercises/`` from ``solutions/`` (``--check``
only compares). ``attnlib check PATH...`` runs exercise notebooks in a fresh kernel,
without changing them, and reports every exercise's status.
"""

import argparse
import json
import re
import sys
from pathlib import Path


def notebook_paths(paths):
    """Expand files and folders into a sorted list of ``.ipynb`` files."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(
                sorted(q for q in p.glob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
            )
        elif p.suffix == ".ipynb" and p.exists():
            found.append(p)
        else:
            raise SystemExit(f"attnlib: {p} is not a notebook or a folder of notebooks.")
    return found


def run_notebook(path, timeout=120, allow_errors=False, quiet_kernel=False):
    """Execute a notebook in a fresh kernel in its own folder; return the executed copy.

    With ``allow_errors`` a cell that raises is recorded as an error output and the
    following cells still run (for grading); otherwise the first error stops it.
    ``quiet_kernel`` drops the kernel process's own log lines (not the notebook's output).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=allow_errors,
        kernel_name="python3",
        record_timing=False,  # timings would change on every run
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    if quiet_kernel:
        import subprocess

        client.execute(stderr=subprocess.DEVNULL)
    else:
        client.execute()
    nb.metadata.pop("widgets", None)  # live widget state belongs to the session, not the file
    return nb


def cmd_execute(args):
    import nbformat

    for path in notebook_paths(args.paths):
        nb = run_notebook(path)
        nbformat.write(nb, path)
        print(f"executed {path}")
    return 0


def cmd_exercises(args):
    from .generate import MarkerError, generate

    try:
        report = generate(args.solutions, args.exercises, check_only=args.check)
    except MarkerError as err:
        print(f"attnlib exercises: {err}", file=sys.stderr)
        return 2
    bad = 0
    for path, state in report:
        if state == "orphan":
            print(f"{path}: no solution notebook makes this exercise notebook")
            bad += args.check
        elif state == "differs":
            print(f"{path}: differs from its solution; run `make exercises`")
            bad += 1
        elif state == "written" or args.verbose:
            print(f"{path}: {state}")
    if not args.check:
        print(
            f"exercises: {len(report)} notebooks, {sum(s == 'written' for _, s in report)} written"
        )
    return 1 if bad else 0


# ---- attnlib check -------------------------------------------------------------------------
CHECK_CALL = re.compile(r"""\bcheck\(\s*(['"])(\w+)\1""")


def _row(notebook, exercise, status, mistake=None, message=""):
    return {
        "notebook": str(notebook),
        "exercise": exercise,
        "status": status,
        "mistake": mistake,
        "message": message,
    }


def check_notebook(path, timeout=120):
    """Run one exercise notebook in memory and return one row per exercise (and per error).

    The file is only read. Each ``check(...)`` call leaves a record in its output's
    metadata; a check that never ran is an error row, and so is a cell that raised
    outside any check.
    """
    import nbformat

    expected, cell_of = expected_checks(nbformat.read(path, as_version=4))
    try:
        nb = run_notebook(path, timeout=timeout, allow_errors=True, quiet_kernel=True)
    except Exception as err:  # the kernel died or a cell timed out
        reason = f"the notebook did not run: {type(err).__name__}: {str(err).strip()[:200]}"
        return [_row(path, ex, "error", message=reason) for ex in expected] or [
            _row(path, "(notebook)", "error", message=reason)
        ]
    return check_rows(path, nb, expected, cell_of)


def expected_checks(nb):
    """The exercise ids of the ``check("id", ...)`` calls in a notebook's code, in order,
    and the index of the cell that checks each."""
    expected, cell_of = [], {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for match in CHECK_CALL.finditer(cell.source):
                if match.group(2) not in cell_of:
                    expected.append(match.group(2))
                    cell_of[match.group(2)] = index
    return expected, cell_of


def check_rows(path, nb, expected=None, cell_of=None):
    """One row per exercise (and per error outside a check) from an executed notebook."""
    from .selfcheck import METADATA_KEY

    if expected is None:
        expected, cell_of = expected_checks(nb)
    expected, cell_of = list(expected), dict(cell_of)
    records, errors = {}, {}
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get(METADATA_KEY)
            if record:
                records[record["exercise"]] = record  # a later check of the same id wins
                if record["exercise"] not in cell_of:
                    expected.append(record["exercise"])
                    cell_of[record["exercise"]] = index
            if output.get("output_type") == "error" and index not in errors:
                errors[index] = f"{output.ename}: {output.evalue}"
    rows = []
    for exercise in expected:
        record = records.get(exercise)
        if record is not None:
            rows.append(
                _row(path, exercise, record["status"], record["mistake"], record["message"])
            )
        else:
            reason = errors.get(cell_of[exercise], "the check did not display its result")
            rows.append(_row(path, exercise, "error", message=f"the check did not run: {reason}"))
    checked_cells = set(cell_of.values())
    for index, reason in errors.items():
        if index not in checked_cells:
            rows.append(_row(path, f"(cell {index + 1})", "error", message=reason))
    return rows


def _plural(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def _status_text(row):
    if row["status"] == "wrong" and row["mistake"]:
        return f"wrong: {row['mistake']}"
    return row["status"]


def summarize(rows):
    from .selfcheck import STATUSES

    counts = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    counts["total"] = len(rows)
    return counts


def cmd_check(args):
    paths = notebook_paths(args.paths)
    if not paths:
        print("attnlib check: no notebooks found.", file=sys.stderr)
        return 2
    rows = []
    for path in paths:
        rows.extend(check_notebook(path, timeout=args.timeout))
    counts = summarize(rows)
    all_passed = bool(rows) and counts["passed"] == len(rows)
    if args.json:
        folders = {folder: summarize(r) for folder, r in by_folder(rows).items()}
        report = {"rows": rows, "summary": counts, "by_folder": folders, "all_passed": all_passed}
        print(json.dumps(report, indent=1))
        return 0 if all_passed else 1
    table = [("notebook", "exercise", "status")] + [
        (r["notebook"], r["exercise"], _status_text(r)) for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for n, line in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        if r["status"] == "error" or (r["status"] == "wrong" and not r["mistake"]):
            print(f"{r['notebook']} {r['exercise']}: {r['message']}")
    folders = by_folder(rows)
    if len(folders) > 1:  # a class: one line per student's folder
        print()
        for folder, folder_rows in folders.items():
            print(f"{folder}: {_summary_line(summarize(folder_rows), folder_rows)}")
    print(f"{_plural(counts['total'], 'exercise')} in {_plural(len(paths), 'notebook')}: "
          f"{_counts_text(counts)}")  # fmt: skip
    return 0 if all_passed else 1


def by_folder(rows):
    """Rows grouped by the folder their notebook is in (one folder per student)."""
    folders = {}
    for r in rows:
        folders.setdefault(str(Path(r["notebook"]).parent), []).append(r)
    return folders


def _counts_text(counts):
    return (
        f"{counts['passed']} passed, {counts['wrong']} wrong, "
        f"{counts['not attempted']} not attempted, {counts['error']} errors"
    )


def _summary_line(counts, rows):
    n_notebooks = len({r["notebook"] for r in rows})
    return (
        f"{counts['passed']} of {_plural(counts['total'], 'exercise')} passed in "
        f"{_plural(n_notebooks, 'notebook')} ({_counts_text(counts)})"
    )


def build_parser():
    parser = argparse.ArgumentParser(prog="attnlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("execute", help="run notebooks in a fresh kernel and store outputs")
    p.add_argument("paths", nargs="+", help="notebook files or folders")
    p.set_defaults(func=cmd_execute)
    p = sub.add_parser("exercises", help="generate exercises/ from solutions/")
    p.add_argument("--solutions", default="solutions", help="folder of solution notebooks")
    p.add_argument("--exercises", default="exercises", help="folder to write exercises to")
    p.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if any exercise is stale"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list unchanged notebooks too")
    p.set_defaults(func=cmd_exercises)
    p = sub.add_parser(
        "check", help="run exercise notebooks (unchanged on disk) and report each exercise"
    )
    p.add_argument("paths", nargs="+", help="notebook files or folders")
    p.add_argument("--json", action="store_true", help="print the rows and summary as JSON")
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
