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

One module per job: this one holds the public entry (:func:`grade`) and the run;
:mod:`.intake` reads the paths, the snapshots and a resume file; :mod:`.integrity`
watches the installed package; :mod:`.textreport` prints the report as text;
:mod:`.notebook` and :mod:`.runner` grade one notebook (:class:`Ahead` starts each slot's
next kernel while its last notebook is judged and cleaned up);
:mod:`.answers` keeps what a student wrote per exercise; :mod:`.shard` picks a shard
of the class; :mod:`.report` writes and merges JSON lines; :mod:`.points`,
:mod:`.gradebook`, :mod:`.feedback`, :mod:`.written`, :mod:`.similarity` and
:mod:`.gradescope` are the exports, each written from the report ``--json`` prints
(:mod:`.exports` holds their command-line options).
"""

import hashlib
import os
import queue
import shutil
import signal
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .answers import collect as collect_answers
from .errors import GraderError
from .intake import (
    DATA_FILE_SIZE,
    NOTEBOOK_SIZE,
    assign,
    escape,
    read_regular,
    read_resume,
    restore,
    snapshot,
    targets,
)
from .integrity import changed_files, compile_package, package_digest, package_files
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
from .textreport import counts_text, progress_line, status_text, summarize, text_report

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
    unprivileged=False,
):
    """Grade every notebook under ``paths``; return the report as a dict.

    ``unprivileged``: where no sandbox can be made and this process is root (Gradescope's
    containers), run every kernel as a uid leased for this run (one per slot,
    :func:`~attnlib.grade.notebook.drop_to`) and kill every process of that uid after
    each notebook; ``report["run_as"]`` then lists those uids.

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
    # two uids a slot: the next kernel starts under one while the last is cleaned up (Ahead)
    box, detail, package_folder = make_sandbox(registry, limits, bwrap, sandbox, 2 * jobs)
    lease = None
    try:
        if box is None and require_sandbox:
            raise GraderError(f"no sandbox can be made here ({detail}); --require-sandbox")
        limits["package_parent"] = package_folder
        if box is None and unprivileged and os.geteuid() == 0:
            lease = sb.Sandbox(bwrap="", package="", installed="")
            lease.lease(max(1, jobs))  # uids no other grader on the machine uses
            limits["run_as_uids"] = list(lease.uids)
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
        if lease is not None:
            from .runner import kill_uid

            for uid in lease.uids:
                kill_uid(uid)
            lease.release()
    if limits.get("run_as_uids"):  # only for unprivileged=True without a sandbox (Gradescope)
        report["run_as"] = limits["run_as_uids"]
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
    ahead = Ahead(box, limits, jobs, sum(path is not None for _, path in notebooks))
    lessons, doubles = {}, {}
    for _, found in groups:
        chosen, twice = assign(found, getattr(registry, "LESSONS", None))
        lessons |= chosen
        doubles |= twice

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
        lesson = lessons.get(str(path))
        if str(path) in doubles:  # one of two notebooks for a lesson: reported, not chosen
            message = doubles[str(path)]
            return {"notebook": str(path), "folder": folder, "unknown_ids": [], "cell_errors": [],
                    "rows": [row(path, NOTEBOOK, "error", message=message)]}  # fmt: skip
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
                uids = limits.get("run_as_uids")
                mine = dict(limits, run_as=uids[slot]) if uids else limits
                job, started = ahead.take(slot)
                result = grade_notebook(path, data, registry, mine, job, lesson, started)
                ahead.put_back(slot, started)  # not used (no kernel needed): the next one's
        except Exception as err:  # a bug of ours costs one notebook, never the class
            reason = f"the grader failed on this notebook: {type(err).__name__}: {err}"
            result = {"notebook": str(path), "unknown_ids": [], "cell_errors": []}
            result["rows"] = [row(path, NOTEBOOK, "error", message=reason[:300])]
        finally:
            if limits.get("run_as_uids"):  # whatever the notebook started, as its uid
                from .runner import kill_uid

                kill_uid(limits["run_as_uids"][slot])
            ahead.done_one()
            slots.put(slot)
        result["folder"] = folder
        result["sha256"] = digest
        if lesson is not None and lesson != Path(path).stem:
            result["lesson"] = lesson  # graded as this lesson, matched by its name's start
        if data is not None:
            exercise_ids = [ex.id for ex in registry.for_notebook(lesson or Path(path).stem)]
            result["answers"] = collect_answers(lesson or Path(path).stem, data, exercise_ids)
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
        ahead.discard()
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


class Ahead:
    """Each slot's next kernel, started while the slot's current notebook is judged and
    cleaned up (sandboxed runs only).

    A slot alternates between two of the run's uids (its ``lanes``): the next kernel
    starts under the other uid while the current runner kills every process of its own,
    so neither touches the other. Each kernel has its own control groups and starts in
    an empty folder; a notebook's files reach it only when that notebook is sent to it
    (:class:`attnlib.grade.notebook.Runner`).
    """

    def __init__(self, box, limits, jobs, notebooks):
        self.box, self.limits, self.jobs = box, limits, max(1, jobs)
        # "done": the next kernel starts once the cells have run (the default); "start":
        # as soon as the notebook is sent, beside its cells (it hides the whole start, but
        # at -j 1 it takes the second core: for measuring, benchmarks/grading.py --ahead)
        self.early = limits.get("ahead", "done") == "start"
        self.left = notebooks  # notebooks not yet started
        self.lane = {}  # slot -> the lane its next kernel takes
        self.ready = {}  # slot -> (job, Runner) started ahead
        self.lock = threading.Lock()
        # as root each kernel has its slot's uid (two lanes a slot); else the grader's
        self.lanes = box is not None and box.root
        self.enabled = box is not None and (not self.lanes or len(box.uids) >= 2 * self.jobs)

    def _job(self, slot):
        if self.box is None:
            return None
        if not (self.enabled and self.lanes):
            return self.box.job(slot)
        with self.lock:
            lane = self.lane.get(slot, 0)
            self.lane[slot] = 1 - lane
        return self.box.job(slot + self.jobs * lane)

    def take(self, slot):
        """``(job, ahead)`` for this slot's next notebook (see ``grade_notebook``)."""
        with self.lock:
            self.left -= 1
            found = self.ready.pop(slot, None)
        if found is not None:
            job, runner = found
            started = {"runner": runner}
        else:
            job, started = self._job(slot), {}
        if self.enabled:

            def next_kernel():
                self.start(slot)

            next_kernel.early = self.early
            started["on_cells_done"] = next_kernel
        return job, started

    def start(self, slot):
        """Start this slot's next kernel now, if a notebook is left for it."""
        from .notebook import Runner

        with self.lock:
            if slot in self.ready or self.left <= 0:
                return
        job = self._job(slot)
        runner = Runner(self.limits, job)
        with self.lock:
            self.ready[slot] = (job, runner)

    def put_back(self, slot, started):
        """A runner started ahead that its notebook did not need: the slot's next."""
        runner = started.pop("runner", None)
        if runner is None:
            return
        with self.lock:
            if slot not in self.ready:
                self.ready[slot] = (runner.sandbox, runner)
                return
        runner.discard()

    def done_one(self):
        with self.lock:
            if self.left > 0 or not self.ready:
                return
            found, self.ready = list(self.ready.values()), {}
        for _, runner in found:
            runner.discard()

    def discard(self):
        with self.lock:
            found, self.ready = list(self.ready.values()), {}
        for _, runner in found:
            runner.discard()


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
        "matched": {r["notebook"]: r["lesson"] for r in results if r.get("lesson")},
        "run": run,
    }


def exit_status(report):
    return 0 if report["all_passed"] else 1


__all__ += ["NOTEBOOK", "row", "summarize", "text_report", "exit_status"]
__all__ += ["DATA_FILE_SIZE", "escape", "read_regular", "snapshot", "restore", "targets"]
__all__ += ["changed_files", "compile_package", "package_files", "progress_line"]
__all__ += ["counts_text", "status_text"]
