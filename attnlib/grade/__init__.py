"""``attnlib check``: grade exercise notebooks so that every verdict is the grader's own.

For a class: ``attnlib check handed-in/*/`` (one folder per student). The grader

- runs every notebook's kernel in a sandbox of its own (:mod:`attnlib.grade.sandbox`,
  bubblewrap): its own unprivileged uid, no network, its own process namespace, no
  answer key, nothing of the machine writable; where no sandbox can be made it says so
  (``"sandbox": false`` and the reason) and ``require_sandbox`` refuses to run;
- reads every handed-in notebook once, at the start, and grades it from that snapshot:
  only regular ``.ipynb`` files up to ``NOTEBOOK_SIZE`` bytes, never through a symbolic
  link (a linked notebook or folder is reported, not followed), and no other file unless
  it is listed (``data_files``) and small; after the run, a snapshotted file that changed
  meanwhile is written back (never through a link) and reported;
- takes the exercises a notebook must hold from the course registry by the file's
  name (``03_scoring.ipynb`` -> lesson ``03_scoring``), never from the file: a removed
  check cell is ``missing``, an invented id is ignored and listed, a file no lesson is
  called is one error row;
- runs every code cell from its source (stored outputs and tags are never read); the
  kernel's ``check(id, answer)`` sends the answer as data
  (:mod:`attnlib.selfcheck.record`), and the verdict is ``exercise.judge(data)`` in this
  process, against expected values this process computed;
- limits every cell and every notebook in time (the wall time kills the whole sandbox),
  memory, CPU, processes and output (every message counted), kills everything the
  notebook started afterwards, and stops (exit 2) if the installed course package
  changed (possible only without a sandbox);
- with ``resume``, reuses the results of an earlier ``--jsonl`` run for every notebook
  whose bytes are unchanged.

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
import json
import os
import queue
import shutil
import signal
import stat
import sys
import tempfile
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

NOTEBOOK_SIZE = 32 * 2**20  # bytes: a larger notebook is not read
DATA_FILE_SIZE = 2**20  # bytes: a listed data file larger than this is not copied

__all__ = [
    "CELL_TIMEOUT",
    "NOTEBOOK_SIZE",
    "NOTEBOOK_BUDGET",
    "OUTPUT_CAP",
    "STATUSES",
    "GraderError",
    "grade",
    "package_digest",
]


class GraderError(RuntimeError):
    """The grader itself cannot go on (exit status 2)."""


def escape(name):
    """A file name as one printable line: control characters, ANSI codes and bytes that
    are not UTF-8 become backslash escapes.

    >>> escape("a\\nb\\x1b[2K.ipynb"), escape("caf\\udce9.ipynb"), escape("é")
    ('a\\\\nb\\\\x1b[2K.ipynb', 'caf\\\\xe9.ipynb', 'é')
    """
    text = str(name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable() and ch != " ":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _link_row(path, what):
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    message = f"{what} is a symbolic link (to {target}): not followed, not graded"
    return row(path, NOTEBOOK, "error", message=message[:300])


def targets(paths):
    """``([(folder, [notebook, ...]), ...], refused)`` for the paths on the command line.

    A folder gives its ``*.ipynb`` files (not its subfolders), sorted, and keeps its
    place even when it holds none; a file is graded in its folder's group. Symbolic links
    (a notebook or a folder) and ``.ipynb`` names that are not regular files are never
    followed: each is one error row in ``refused`` (``{folder: [row, ...]}``).
    """
    groups, refused = {}, {}
    for p in map(Path, paths):
        if p.is_symlink():
            groups.setdefault(str(p), [])
            refused.setdefault(str(p), []).append(_link_row(p, "the folder or file"))
        elif p.is_dir():
            groups.setdefault(str(p), [])
            for q in sorted(p.iterdir()):
                if q.suffix != ".ipynb":
                    continue
                if q.is_symlink():
                    refused.setdefault(str(p), []).append(_link_row(q, "the notebook"))
                elif not stat.S_ISREG(q.lstat().st_mode):
                    message = "not a regular file: not graded"
                    odd = row(q, NOTEBOOK, "error", message=message)
                    refused.setdefault(str(p), []).append(odd)
                else:
                    groups[str(p)].append(q)
        elif p.is_file() and p.suffix == ".ipynb":
            groups.setdefault(str(p.parent), []).append(p)
        else:
            raise GraderError(f"{escape(p)} is not a notebook or a folder of notebooks.")
    return [(folder, list(dict.fromkeys(found))) for folder, found in groups.items()], refused


def read_regular(path, limit):
    """The bytes of a regular file (never through a link, never a FIFO), or a reason."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        return f"could not be opened ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > limit:
            return f"{info.st_size} bytes, more than the {limit} allowed"
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        return data if len(data) <= limit else f"more than the {limit} bytes allowed"
    finally:
        os.close(fd)


def snapshot(groups, data_files=(), notebook_size=NOTEBOOK_SIZE, data_size=DATA_FILE_SIZE):
    """Every handed-in notebook's bytes, read once now; and each folder's listed files.

    Returns ``(files, extras, reasons)``: ``{path: bytes}`` of the notebooks,
    ``{folder: {name: bytes}}`` of the listed data files (small, regular) and
    ``{path: reason}`` for each notebook or listed file that could not be read.
    No other file is opened.
    """
    files, extras, reasons = {}, {}, {}
    for folder, notebooks in groups:
        for path in notebooks:
            data = read_regular(path, notebook_size)
            if isinstance(data, bytes):
                files[str(path)] = data
            else:
                reasons[str(path)] = data
        for name in data_files:
            path = Path(folder) / name
            if not os.path.lexists(path):
                continue
            data = read_regular(path, data_size)
            if isinstance(data, bytes):
                extras.setdefault(folder, {})[name] = data
            else:
                reasons[str(path)] = data
    return files, extras, reasons


def restore(files):
    """Write back every snapshot file that changed or vanished; return their paths.

    A link put in a file's place is removed, never written through.
    """
    touched = []
    for name, data in files.items():
        path = Path(name)
        same = read_regular(path, len(data)) == data if not path.is_symlink() else False
        if not same:
            touched.append(name)
            try:
                if path.is_symlink():
                    path.unlink()
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                fd = os.open(path, flags, 0o644)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
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
            except (ProcessLookupError, PermissionError):
                pass
            try:  # reaped even when it was a zombie already (nothing left to kill)
                os.waitpid(pid, 0)
            except ChildProcessError:
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


def read_resume(path):
    """``{notebook: result}`` from an earlier ``--jsonl`` file (lines with ``sha256``)."""
    found = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict) and {"notebook", "rows", "sha256"} <= item.keys():
                    found[item["notebook"]] = item
    except OSError as err:
        raise GraderError(f"--resume: {path} could not be read ({err.strerror})") from err
    return found


def make_sandbox(registry, limits, bwrap=None, enabled=True, slots=1):
    """``(Sandbox or None, detail, stripped package folder)`` for this run.

    The sandbox's uids are leased before the probe runs, so the probe runs as a uid of
    this run's own: another grader on the machine, which kills every process of its own
    uids after each notebook, never kills it. The caller releases the lease.
    """
    from . import sandbox as sb

    folder = tempfile.mkdtemp(prefix="attnlib-package-")
    os.chmod(folder, 0o755)
    package = sb.strip_package(folder, registry)
    installed = sb.installed_package()
    box = sb.Sandbox(bwrap=sb.bwrap_program(bwrap), package=package, installed=installed)
    box.limits = limits
    if not enabled:
        return None, "turned off (--no-sandbox)" + sb.unsandboxed_limits(limits), folder
    try:
        box.lease(max(1, slots))
    except OSError as err:
        shutil.rmtree(folder, ignore_errors=True)
        raise GraderError(f"the sandbox cannot run: {err}") from err
    reason = sb.probe(box)
    if reason:
        box.release()
        return None, reason + sb.unsandboxed_limits(limits), folder
    return box, sb.describe(box), folder


def grade(
    paths,
    jobs=1,
    limits=None,
    on_result=None,
    registry=None,
    verify_package=True,
    require_sandbox=False,
    sandbox=True,
    bwrap=None,
    resume=None,
    data_files=(),
    shard=None,
    restore_changed=True,
):
    """Grade every notebook under ``paths``; return the report as a dict.

    ``on_result(result, done, total)`` is called as each notebook finishes (progress,
    JSON lines); ``registry`` defaults to the course's. ``sandbox=False`` grades without
    one (for measuring its cost); ``require_sandbox`` raises when none can be made.
    ``resume`` names a JSON-lines file of an earlier run. ``shard=(i, N)`` grades the
    folders of shard ``i`` of ``N`` only (:mod:`attnlib.grade.shard`). A notebook that
    changed during the run is written back from the grader's snapshot only without a
    sandbox (a kernel could have written it) and only when ``restore_changed``: in the
    sandbox no kernel can reach it, so the change is its owner's save (JupyterLab's
    autosave while ``attnlib progress`` runs) and is kept, as ``attnlib progress`` always
    keeps it. Raises
    :class:`GraderError` when the grader cannot run or the installed package changed.
    """
    from . import sandbox as sb

    limits = {
        "cell_timeout": CELL_TIMEOUT,
        "budget": NOTEBOOK_BUDGET,
        "output_cap": OUTPUT_CAP,
        "memory": sb.MEMORY,
        "cpu": sb.CPU,
        "processes": sb.PROCESSES,
        "file_size": sb.FILE_SIZE,
        "tmpfs": sb.TMPFS,
        **(limits or {}),
    }
    limits.setdefault("wall", None)
    if not limits["wall"]:
        limits["wall"] = limits["budget"] + 60.0
    for name in data_files:
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise GraderError(f"--data-file {escape(name)!r}: give a file name, not a path")
    groups, refused = targets(paths)
    run = shard_run_info(groups, shard)  # the whole class, for `attnlib report` to merge
    groups = shard_select(groups, shard)
    mine = {folder for folder, _ in groups}
    refused = {folder: rows for folder, rows in refused.items() if folder in mine}
    registry = registry or _load_registry()
    from attnlib.selfcheck import wire  # noqa: F401 - imported before any kernel runs

    previous = read_resume(resume) if resume else {}
    from .runner import become_subreaper, children

    become_subreaper()
    # the children this process had before: anything else is the run's and is swept, the
    # probe's sandbox included (its namespace's first process is re-parented here)
    known = set(children(os.getpid()))
    box, detail, package_folder = make_sandbox(registry, limits, bwrap, sandbox, jobs)
    try:
        if box is None and require_sandbox:
            raise GraderError(f"no sandbox can be made here ({detail}); --require-sandbox")
        limits["package_parent"] = package_folder
        report = _grade(
            groups,
            refused,
            jobs,
            limits,
            on_result,
            registry,
            verify_package and box is None,  # in the sandbox nothing of it is writable
            box,
            previous,
            data_files,
            run,
            known,
            restore_changed and box is None,
        )
    finally:
        shutil.rmtree(package_folder, ignore_errors=True)
        if box is not None:
            box.release()
        sweep(known)  # the probe's, when no notebook ran after it
    report["sandbox"] = box is not None
    report["sandbox_detail"] = detail
    report["sandbox_uids"] = list(box.uids) if box is not None else []
    return report


def _grade(
    groups,
    refused,
    jobs,
    limits,
    on_result,
    registry,
    verify_package,
    box,
    previous,
    data_files,
    run,
    known,
    restore_changed,
):
    files, extras, reasons = snapshot(groups, data_files)
    limits["data_files"] = extras
    compile_package()
    before = package_files()
    notebooks = [(folder, path) for folder, found in groups for path in found]
    results, lock, touched = {}, threading.Lock(), []
    slots = queue.SimpleQueue()
    for n in range(max(1, jobs)):
        slots.put(n)
    notebooks += [(folder, None) for folder in refused]

    def one(item):
        folder, path = item
        if path is None:  # links and odd files: rows made without reading anything
            return {
                "notebook": folder,
                "folder": folder,
                "rows": refused[folder],
                "unknown_ids": [],
                "cell_errors": [],
                "refused": True,
            }
        if touched:
            return None
        data = files.get(str(path))
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        old = previous.get(str(path))
        if old is not None and old.get("sha256") == digest:
            return dict(old, folder=folder, resumed=True)
        slot = slots.get()
        try:
            if data is None:
                reason = f"not gradable: {reasons.get(str(path), 'could not be read')}"
                result = {"notebook": str(path), "unknown_ids": [], "cell_errors": []}
                result["rows"] = [row(path, NOTEBOOK, "error", message=reason[:300])]
            else:
                result = grade_notebook(
                    path, data, registry, limits, box.job(slot) if box else None
                )
        except Exception as err:  # a bug of ours costs one notebook, never the class
            reason = f"the grader failed on this notebook: {type(err).__name__}: {err}"
            result = {"notebook": str(path), "unknown_ids": [], "cell_errors": []}
            result["rows"] = [row(path, NOTEBOOK, "error", message=reason[:300])]
        finally:
            slots.put(slot)
        result["folder"] = folder
        result["sha256"] = digest
        if data is not None:
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
        tampered = restore(files) if restore_changed else []
    if touched:
        raise GraderError(
            "the installed course package (attnlib) changed while grading "
            f"{', '.join(touched)}; stopped. Reinstall it (`git checkout attnlib` or pip), "
            "then run again with --resume on this run's --jsonl output to keep the verdicts "
            "already given; grade untrusted work in a sandbox (bubblewrap) or a container."
        )
    ordered = [results[item] for item in notebooks if item in results]
    report = build_report(groups, ordered, tampered, limits, run)
    report["not_read"] = {escape(k): v for k, v in reasons.items()}
    return report


LIMIT_NAMES = (
    "cell_timeout",
    "budget",
    "output_cap",
    "wall",
    "memory",
    "cpu",
    "processes",
    "file_size",
    "tmpfs",
)


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
        "summary": counts | {"notebooks": sum(not r.get("refused") for r in results)},
        "by_folder": by_folder,
        "all_passed": all_passed,
        "unknown_ids": {r["notebook"]: r["unknown_ids"] for r in results if r["unknown_ids"]},
        "cell_errors": {r["notebook"]: r["cell_errors"] for r in results if r["cell_errors"]},
        "tampered": tampered,
        "limits": {k: limits[k] for k in LIMIT_NAMES},
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


def _say(line, out):
    """Print one line whatever the stream's encoding can hold (the rest is escaped)."""
    try:
        print(line, file=out)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "ascii"
        print(line.encode(encoding, "backslashreplace").decode(encoding), file=out)


def text_report(report, out=None):
    """The table, the reasons, one line per folder and one for the class.

    Every name and message is escaped (:func:`escape`): a file name cannot start a line
    of its own, move the cursor or stop the report, under any locale.
    """
    out = out or sys.stdout
    rows = report["rows"]
    table = [("notebook", "exercise", "status")] + [
        (escape(r["notebook"]), escape(r["exercise"]), escape(status_text(r))) for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for n, line in enumerate(table):
        _say("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip(), out)
        if n == 0:
            _say("  ".join("-" * w for w in widths), out)
    for r in rows:
        if r["status"] in ("error", "missing", "not reached") or (
            r["status"] == "wrong" and not r["mistake"]
        ):
            _say(f"{escape(r['notebook'])} {escape(r['exercise'])}: {escape(r['message'])}", out)
    for notebook, errors in report["cell_errors"].items():
        for number, reason in errors:
            _say(f"{escape(notebook)}: cell {number} raised {escape(reason)}", out)
    for notebook, ids in report["unknown_ids"].items():
        listed = ", ".join(escape(i) for i in ids)
        _say(f"{escape(notebook)}: ignored unknown exercise ids: {listed}", out)
    for name in report["tampered"]:
        _say(f"{escape(name)}: changed during grading (a notebook wrote to it); restored", out)
    for name, reason in report.get("not_read", {}).items():
        _say(f"{escape(name)}: not read: {escape(reason)}", out)
    if "sandbox" in report:
        where = "sandbox" if report["sandbox"] else "NO SANDBOX"
        _say(f"{where}: {escape(report['sandbox_detail'])}", out)
    _say("", out)
    for folder, counts in report["by_folder"].items():
        if not counts["notebooks"]:
            _say(f"{escape(folder)}: no notebooks to grade", out)
        else:
            _say(
                f"{escape(folder)}: {counts['passed']} of {_plural(counts['total'], 'exercise')} "
                f"passed in {_plural(counts['notebooks'], 'notebook')} ({counts_text(counts)})",
                out,
            )
    counts = report["summary"]
    _say(
        f"{_plural(counts['total'], 'exercise')} in {_plural(counts['notebooks'], 'notebook')}: "
        f"{counts_text(counts)}",
        out,
    )


def progress_line(result, done, total):
    """One line on stderr per finished notebook."""
    counts = summarize(result["rows"])
    seconds = result.get("seconds")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return (
        f"[{done}/{total}] {escape(result['notebook'])}: {counts['passed']} of "
        f"{_plural(counts['total'], 'row')} passed{took}"
    )


def exit_status(report):
    return 0 if report["all_passed"] else 1


__all__ += ["NOTEBOOK", "row", "summarize", "text_report", "exit_status"]
