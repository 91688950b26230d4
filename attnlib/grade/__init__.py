"""``attnlib check``: grade exercise notebooks so that every verdict is the grader's own.

For a class: ``attnlib check handed-in/*/`` (one folder per student). The grader

- reads every handed-in file once, at the start, and grades it from that snapshot,
  written into a fresh temporary folder that is the kernel's working directory; after
  the run, any handed-in file that changed meanwhile is written back and reported;
- takes the exercises a notebook must hold from the course registry by the file's
  name (``03_scoring.ipynb`` -> lesson ``03_scoring``), never from the file: a removed
  check cell is ``missing``, an invented id is ignored and listed, a file no lesson is
  called is one error row;
- runs every code cell from its source (stored outputs and tags are never read), and
  after each check cell its own capture cell, which sends the answer back as data
  (:mod:`attnlib.selfcheck.wire`); the verdict is ``exercise.judge(data)`` in this
  process, against expected values this process computed;
- limits every cell and every notebook in time and output, kills the kernel's whole
  process tree afterwards, and stops (exit 2) if the installed course package changed.

Statuses: passed / wrong / not attempted / missing / not reached / error. Exit codes:
0 every exercise passed, 1 something did not, 2 the grader itself could not run.

One module per job: :mod:`.notebook` and :mod:`.runner` grade one notebook;
:mod:`.answers` keeps what a student wrote per exercise; :mod:`.shard` picks a shard
of the class; :mod:`.report` writes and merges JSON lines; :mod:`.points`,
:mod:`.gradebook`, :mod:`.feedback`, :mod:`.written`, :mod:`.similarity` and
:mod:`.gradescope` are the exports, each written from the report ``--json`` prints
(:mod:`.exports` holds their command-line options).
"""

import hashlib
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .answers import collect as collect_answers
from .notebook import (
    CELL_TIMEOUT,
    NOTEBOOK,
    NOTEBOOK_BUDGET,
    OUTPUT_CAP,
    STATUSES,
    grade_notebook,
    row,
)
from .shard import run_info as shard_run_info
from .shard import select as shard_select

__all__ = [
    "CELL_TIMEOUT",
    "NOTEBOOK_BUDGET",
    "OUTPUT_CAP",
    "STATUSES",
    "GraderError",
    "grade",
    "package_digest",
]


class GraderError(RuntimeError):
    """The grader itself cannot go on (exit status 2)."""


def targets(paths):
    """``[(folder, [notebook, ...]), ...]`` for the paths named on the command line.

    A folder gives its ``*.ipynb`` files (not its subfolders), sorted, and keeps its
    place even when it holds none; a file is graded in its folder's group.
    """
    groups = {}
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.glob("*.ipynb") if q.is_file())
            groups.setdefault(str(p), []).extend(found)
        elif p.is_file() and p.suffix == ".ipynb":
            groups.setdefault(str(p.parent), []).append(p)
        else:
            raise GraderError(f"{p} is not a notebook or a folder of notebooks.")
    return [(folder, list(dict.fromkeys(found))) for folder, found in groups.items()]


def snapshot(groups):
    """Every handed-in file's bytes (notebooks and their neighbours), read once now."""
    files = {}
    for folder, notebooks in groups:
        neighbours = [q for q in Path(folder).iterdir() if q.is_file() and not q.is_symlink()]
        for path in [*notebooks, *neighbours]:
            try:
                files[str(path)] = path.read_bytes()
            except OSError:
                files[str(path)] = None
    return files


def restore(files):
    """Write back every snapshot file that changed or vanished; return their paths."""
    touched = []
    for name, data in files.items():
        if data is None:
            continue
        path = Path(name)
        try:
            same = path.is_file() and not path.is_symlink() and path.read_bytes() == data
        except OSError:
            same = False
        if not same:
            touched.append(name)
            try:
                if path.is_symlink() or path.is_dir():
                    path.unlink()
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            except OSError:
                pass
    return touched


def package_root():
    import attnlib

    return Path(attnlib.__file__).resolve().parent


def compile_package():
    """Write the package's bytecode now (where allowed), so that grading writes none."""
    import compileall

    compileall.compile_dir(package_root(), quiet=2)


def package_files():
    """``{relative path: SHA-256}`` of the installed ``attnlib`` package, bytecode included.

    Kernels run with ``PYTHONDONTWRITEBYTECODE``, and :func:`compile_package` runs
    before the first look, so a ``.pyc`` that appears or changes is tampering too.
    """
    root = package_root()
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def package_digest():
    """One SHA-256 over :func:`package_files`."""
    return hashlib.sha256(repr(sorted(package_files().items())).encode()).hexdigest()


def changed_files(before, after):
    """Names of the files added, removed or changed between two :func:`package_files`."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


def sweep(known):
    """Kill and reap every child of this process that is neither a runner nor in ``known``.

    The grader is a child subreaper (Linux), so a process a notebook started comes here
    when its runner dies (a notebook can kill its own runner); a runner's own sweep
    handles every other case.
    """
    from .notebook import RUNNERS, RUNNERS_LOCK
    from .runner import children

    with RUNNERS_LOCK:
        for pid in set(children(os.getpid())) - known - RUNNERS:
            try:
                pgid = os.getpgid(pid)
                if pgid != os.getpgrp():
                    os.killpg(pgid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, PermissionError, ChildProcessError):
                pass


def _load_registry():
    try:
        from attnlib.selfcheck import registry

        registry.exercises()  # compute every expected value now, before any student code runs
        for ex in registry.exercises().values():
            registry.for_notebook(ex.lesson)
    except Exception as err:
        raise GraderError(f"the course's exercises could not be loaded: {err!r}") from err
    return registry


def summarize(rows):
    """Counts per status and the total."""
    counts = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    counts["total"] = len(rows)
    return counts


def grade(
    paths, jobs=1, limits=None, on_result=None, registry=None, verify_package=True, shard=None
):
    """Grade every notebook under ``paths``; return the report as a dict.

    ``on_result(result, done, total)`` is called as each notebook finishes (progress,
    JSON lines); ``registry`` defaults to the course's; ``shard=(i, N)`` grades the
    folders of shard ``i`` of ``N`` only (:mod:`attnlib.grade.shard`). Raises
    :class:`GraderError` when the grader cannot run or the installed package changed.
    """
    limits = {
        "cell_timeout": CELL_TIMEOUT,
        "budget": NOTEBOOK_BUDGET,
        "output_cap": OUTPUT_CAP,
        **(limits or {}),
    }
    groups = targets(paths)
    run = shard_run_info(groups, shard)  # the whole class, for `attnlib report` to merge
    groups = shard_select(groups, shard)
    registry = registry or _load_registry()
    from attnlib.selfcheck import wire  # noqa: F401 - imported before any kernel runs

    files = snapshot(groups)
    compile_package()
    before = package_files()
    notebooks = [(folder, path) for folder, found in groups for path in found]
    from .runner import become_subreaper, children

    become_subreaper()
    known = set(children(os.getpid()))
    results, lock, touched = {}, threading.Lock(), []

    def one(item):
        folder, path = item
        if touched:
            return None
        data = files.get(str(path)) or b""
        try:
            result = grade_notebook(path, data, registry, limits)
        except Exception as err:  # a bug of ours costs one notebook, never the class
            reason = f"the grader failed on this notebook: {type(err).__name__}: {err}"
            result = {"notebook": str(path), "unknown_ids": [], "cell_errors": []}
            result["rows"] = [row(path, NOTEBOOK, "error", message=reason[:300])]
        result["folder"] = folder
        exercise_ids = [ex.id for ex in registry.for_notebook(Path(path).stem)]
        result["answers"] = collect_answers(Path(path).stem, data, exercise_ids)
        sweep(known)
        if verify_package:
            changed = changed_files(before, package_files())
            if changed:
                with lock:
                    touched.append(f"{path} ({', '.join(changed[:3])})")
        return result

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(one, item): item for item in notebooks}
            for future in as_completed(futures):
                result = future.result()
                if result is None:
                    continue
                with lock:
                    results[futures[future]] = result
                    done = len(results)
                if on_result is not None:
                    on_result(result, done, len(notebooks))
    finally:
        sweep(known)
        tampered = restore(files)
    if touched:
        raise GraderError(
            "the installed course package (attnlib) changed while grading "
            f"{', '.join(touched)}; stopped. Reinstall it (`git checkout attnlib` or pip) "
            "and grade untrusted work in a container (see the README)."
        )
    ordered = [results[item] for item in notebooks if item in results]
    return build_report(groups, ordered, tampered, limits, run)


def build_report(groups, results, tampered, limits, run=None):
    """The whole report: rows, a summary per folder and for the class, and notes."""
    rows = [r for result in results for r in result["rows"]]
    by_folder = {}
    for folder, found in groups:
        folder_rows = [r for res in results if res["folder"] == folder for r in res["rows"]]
        by_folder[folder] = summarize(folder_rows) | {"notebooks": len(found)}
    counts = summarize(rows)
    all_passed = (
        bool(rows)
        and counts["passed"] == len(rows)
        and all(s["notebooks"] for s in by_folder.values())
        and not tampered
    )
    return {
        "rows": rows,
        "summary": counts | {"notebooks": len(results)},
        "by_folder": by_folder,
        "all_passed": all_passed,
        "unknown_ids": {r["notebook"]: r["unknown_ids"] for r in results if r["unknown_ids"]},
        "cell_errors": {r["notebook"]: r["cell_errors"] for r in results if r["cell_errors"]},
        "tampered": tampered,
        "limits": {k: limits[k] for k in ("cell_timeout", "budget", "output_cap")},
        "answers": {r["notebook"]: r["answers"] for r in results if r.get("answers")},
        "run": run,
    }


def _plural(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def counts_text(counts):
    parts = [f"{counts['passed']} passed", f"{counts['wrong']} wrong"]
    parts += [f"{counts[s]} {s}" for s in ("not attempted", "missing", "not reached")]
    parts.append(_plural(counts["error"], "error"))
    return ", ".join(parts)


def status_text(r):
    if r["status"] == "wrong" and r["mistake"]:
        return f"wrong: {r['mistake']}"
    return r["status"]


def text_report(report, out=None):
    """The table, the reasons, one line per folder and one for the class."""
    out = out or sys.stdout
    rows = report["rows"]
    table = [("notebook", "exercise", "status")] + [
        (r["notebook"], r["exercise"], status_text(r)) for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for n, line in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)
    for r in rows:
        if r["status"] in ("error", "missing", "not reached") or (
            r["status"] == "wrong" and not r["mistake"]
        ):
            print(f"{r['notebook']} {r['exercise']}: {r['message']}", file=out)
    for notebook, errors in report["cell_errors"].items():
        for number, reason in errors:
            print(f"{notebook}: cell {number} raised {reason}", file=out)
    for notebook, ids in report["unknown_ids"].items():
        print(f"{notebook}: ignored unknown exercise ids: {', '.join(ids)}", file=out)
    for name in report["tampered"]:
        print(f"{name}: changed during grading (a notebook wrote to it); restored", file=out)
    print(file=out)
    for folder, counts in report["by_folder"].items():
        if not counts["notebooks"]:
            print(f"{folder}: no notebooks to grade", file=out)
        else:
            print(
                f"{folder}: {counts['passed']} of {_plural(counts['total'], 'exercise')} passed "
                f"in {_plural(counts['notebooks'], 'notebook')} ({counts_text(counts)})",
                file=out,
            )
    counts = report["summary"]
    print(
        f"{_plural(counts['total'], 'exercise')} in {_plural(counts['notebooks'], 'notebook')}: "
        f"{counts_text(counts)}",
        file=out,
    )


def progress_line(result, done, total):
    """One line on stderr per finished notebook."""
    counts = summarize(result["rows"])
    seconds = result.get("seconds")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return (
        f"[{done}/{total}] {result['notebook']}: {counts['passed']} of "
        f"{_plural(counts['total'], 'row')} passed{took}"
    )


def exit_status(report):
    return 0 if report["all_passed"] else 1


__all__ += ["NOTEBOOK", "row", "summarize", "text_report", "exit_status"]
