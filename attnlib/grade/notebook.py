"""Grade one handed-in notebook: read it as data, run its cells, judge what comes back.

The grader never trusts the file or the kernel for a verdict. It reads the notebook's
JSON itself (a broken file is one error row, not a crash); takes the list of exercises
from the course registry by the file's name; runs every code cell from its source in a
fresh kernel (:mod:`attnlib.grade.runner`, in a sandbox: :mod:`attnlib.grade.sandbox`)
that has no answer key, where ``check(id, answer)`` records the answer as data
(:mod:`attnlib.selfcheck.record`) instead of judging it; and judges that data in this
process with the exercise's expected values. So the grader judges exactly what the
notebook's ``check`` was given, whatever the variable or function was called.
"""

import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CELL_TIMEOUT = 30.0  # seconds one cell may run
NOTEBOOK_BUDGET = 120.0  # seconds all the cells of one notebook may run
OUTPUT_CAP = 16 * 2**20  # bytes of output one notebook's cells may send
STATUSES = ("passed", "wrong", "not attempted", "missing", "not reached", "error")
CHECK_CALL = re.compile(r"""\bcheck\(\s*(?:exercise_id\s*=\s*)?(['"])(\w+)\1""")
WALL_EXTRA = 60.0  # seconds a notebook may take beyond its budget (the kernel's start)
RUNNER = Path(__file__).with_name("runner.py")
# a kernel can fail to start when another grabs one of its free ports first (-j N, TCP)
START_ATTEMPTS = 3
RUNNERS, RUNNERS_LOCK = set(), threading.Lock()  # process ids of the runners now running
NOTEBOOK = "(notebook)"  # the exercise column of a row about the whole file


def row(notebook, exercise, status, mistake=None, message=""):
    """One line of the report."""
    return {
        "notebook": str(notebook),
        "exercise": exercise,
        "status": status,
        "mistake": mistake,
        "message": message,
    }


def _one_line(text, limit=300):
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class NotANotebook(ValueError):
    """The bytes are not a notebook the grader can run."""


def code_cells(data):
    """``[(cell_number, source), ...]`` of a notebook's code cells, from its bytes.

    ``cell_number`` counts every cell from 1, as Jupyter shows them. Outputs, execution
    counts and tags are never read: nothing stored in the file can count.
    """
    if not data:
        raise NotANotebook("the file is empty (0 bytes)")
    try:
        nb = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise NotANotebook("the file is not UTF-8 text") from None
    except (ValueError, RecursionError) as err:
        raise NotANotebook(f"the file is not valid JSON ({_one_line(err, 120)})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotANotebook("the file is JSON but not a notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise NotANotebook(f"the notebook format is {nb.get('nbformat')!r}, not 4")
    cells = []
    for number, cell in enumerate(nb["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotANotebook(f"cell {number} is not a cell")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotANotebook(f"cell {number}'s source is not text")
        cells.append((number, source))
    return cells


def _feedback_row(notebook, exercise_id, feedback):
    status = getattr(feedback, "status", None)
    if status not in STATUSES:
        status = "passed" if feedback.passed else "wrong"
    return row(notebook, exercise_id, status, feedback.mistake, feedback.message)


def judge_answer(notebook, exercise, text):
    """Decode the answer ``check`` recorded (wire text) in this process, judge it; one row."""
    from attnlib.selfcheck import wire

    try:
        value = wire.decode(text)
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        return row(notebook, exercise.id, "error", message=f"malformed answer data: {err}")
    try:
        feedback = exercise.judge(value)
    except Exception as err:  # judge() promises never to raise; say so if it does
        return row(notebook, exercise.id, "error", message=f"the judge failed: {err!r}")
    result_row = _feedback_row(notebook, exercise.id, feedback)
    if exercise.parts:  # partial credit, judged here from the same data (attnlib.grade.points)
        result_row["credit"] = exercise.credit(value)
    return result_row


def _stop_reason(stop, cells, limits, exit_code):
    index = stop["cell"]
    where = f"cell {cells[index][0]}" if 0 <= index < len(cells) else "start-up"
    reason = stop["reason"]
    if reason == "timeout":
        return f"{where} ran past the {limits['cell_timeout']:g} s limit per cell"
    if reason == "budget":
        return f"the notebook ran past its {limits['budget']:g} s budget in {where}"
    if reason == "died":
        return f"the kernel died in {where} (exit status {exit_code})"
    if reason == "output":
        return f"{where} printed more than the {limits['output_cap']} bytes allowed"
    if reason == "runner":
        return f"the kernel's runner was killed (exit status {exit_code})"
    if reason == "wall":
        return f"the notebook ran past its {limits['wall']:g} s wall time; the sandbox was killed"
    return "the kernel did not start"


def grade_notebook(path, data, registry, limits, sandbox=None, lesson=None, ahead=None):
    """Grade one notebook from its snapshot ``data`` (bytes); return a result dict.

    ``sandbox`` is the runner's ``job["sandbox"]`` part (None: the fallback); ``lesson``
    the lesson it is graded as (default: its file name without ``.ipynb``); ``ahead`` a
    dict whose ``"runner"`` (a :class:`Runner` started ahead for ``sandbox``) the first
    kernel uses, taken out of it, and whose ``"on_cells_done"`` is called once the cells
    ran (see :func:`run_in_kernel`).
    """
    ahead = ahead if ahead is not None else {}
    started = time.monotonic()
    result = {"notebook": str(path), "rows": [], "unknown_ids": [], "cell_errors": []}
    rows = result["rows"]
    try:
        cells = code_cells(data)
    except NotANotebook as err:
        rows.append(row(path, NOTEBOOK, "error", message=f"not gradable: {err}"))
        return result
    stem = lesson or Path(path).stem
    exercises = registry.for_notebook(stem)
    if not exercises:
        rows.append(
            row(
                path,
                NOTEBOOK,
                "error",
                message=f"not a course notebook: no lesson is called {stem}",
            )
        )
        return result
    wanted = {ex.id for ex in exercises}
    for _, source in cells:
        for match in CHECK_CALL.finditer(source):
            if match.group(2) not in wanted and match.group(2) not in result["unknown_ids"]:
                result["unknown_ids"].append(match.group(2))
    if any("check" in source for _, source in cells):
        for _ in range(START_ATTEMPTS):  # a kernel that never started ran no cell: try again
            sources = [s for _, s in cells]
            runner, done = ahead.pop("runner", None), ahead.get("on_cells_done")
            output = run_in_kernel(path, data, sources, limits, sandbox, runner, done)
            if (output.get("stop") or {}).get("reason") != "start":
                break
    else:
        output = {"answers": {}, "cell_errors": [], "stop": None}
    for exercise_id in output["answers"]:
        if exercise_id not in wanted and exercise_id not in result["unknown_ids"]:
            result["unknown_ids"].append(exercise_id)
    cell_error = {index: reason for index, reason in output.get("cell_errors", [])}
    result["cell_errors"] = [
        [cells[i][0], reason] for i, reason in output.get("cell_errors", []) if i < len(cells)
    ]
    result["cell_seconds"] = output.get("cell_seconds", 0.0)
    stop = output.get("stop")
    reason = _stop_reason(stop, cells, limits, output.get("exit")) if stop else None
    for ex in exercises:
        literal = re.compile(rf"""(['"]){ex.id}\1""")
        mentions = [i for i, (_, source) in enumerate(cells) if literal.search(source)]
        raised = [i for i in mentions if i in cell_error]
        if ex.id in output["answers"]:
            rows.append(judge_answer(path, ex, output["answers"][ex.id]))
        elif not mentions:
            message = f'no cell calls check("{ex.id}", ...): the check cell was removed'
            rows.append(row(path, ex.id, "missing", message=message))
        elif reason:
            rows.append(row(path, ex.id, "not reached", message=f"not reached: {reason}"))
        elif raised:
            message = f"cell {cells[raised[-1]][0]} raised {cell_error[raised[-1]]}"
            rows.append(row(path, ex.id, "error", message=_one_line(message)))
        else:
            message = f'check("{ex.id}", ...) was never called'
            rows.append(row(path, ex.id, "not attempted", message=message))
    if reason:
        rows.append(row(path, NOTEBOOK, "error", message=reason))
    result["seconds"] = time.monotonic() - started
    return result


# util-linux's setpriv, as the sandbox uses it: no groups, no capabilities, no way back
DROP = (
    "setpriv --reuid={uid} --regid={uid} --clear-groups --inh-caps=-all --bounding-set=-all "
    "--no-new-privs --"
)


def drop_to(uid, folder, private):
    """Make the kernel's folders ``uid``'s own and copy the runner there; the copy's path.

    Without a sandbox, as root, the grader runs the runner (and so the kernel) as an
    unprivileged ``uid`` (``limits["run_as"]``): it owns the kernel's working folder and
    the runner's private one, nothing else, and reads the runner from a copy, so the
    installed course package (with its answer key) can be readable by root alone.
    """
    for where in (folder, private):
        os.chown(where, uid, uid)
        os.chmod(where, 0o700)
        for name in os.listdir(where):
            os.chown(os.path.join(where, name), uid, uid)
    copy = os.path.join(private, "runner.py")
    shutil.copyfile(RUNNER, copy)
    os.chmod(copy, 0o444)  # root's file in the uid's folder: readable, not the uid's to change
    return copy


class Runner:
    """A runner and its kernel, started before its notebook is known (see :mod:`.runner`).

    The kernel starts (control groups, sandbox, first reply) in an empty folder;
    :func:`run_in_kernel` later writes one notebook's files there and sends its cells.
    :meth:`discard` ends one that no notebook needed (nothing of a student's ran in it).
    """

    def __init__(self, limits, sandbox=None):
        self.sandbox = sandbox
        self.uid = limits.get("run_as") if sandbox is None else None  # no sandbox: drop root
        job = {"output_cap": limits["output_cap"], "sandbox": sandbox}
        if sandbox is None:
            from .sandbox import environment, rlimits

            job["env"] = environment()
            job["rlimits"] = rlimits(limits, per_uid=self.uid is not None)
            job["package_parent"] = limits["package_parent"]
        self.folder = tempfile.mkdtemp(prefix="attnlib-grade-")  # the kernel's working folder
        job["private"] = self.private = tempfile.mkdtemp(prefix="attnlib-runner-")
        self.process = None
        try:
            command = [sys.executable, "-I", str(RUNNER)]
            if self.uid is not None:  # the runner and its kernel run as ``uid``: see drop_to
                command = [*DROP.format(uid=self.uid).split(), sys.executable, "-I"]
                command.append(drop_to(self.uid, self.folder, self.private))
            with RUNNERS_LOCK:  # a sweep never takes a runner just started for an orphan
                self.process = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    cwd=self.folder,
                )
                RUNNERS.add(self.process.pid)
            self.process.stdin.write(json.dumps(job).encode() + b"\n")
            self.process.stdin.flush()
        except BaseException:
            self.discard()
            raise

    def discard(self):
        """End a runner no notebook used (its stdin closes: it cleans up and exits)."""
        if self.process is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
            with RUNNERS_LOCK:
                RUNNERS.discard(self.process.pid)
        self.cleanup()

    def cleanup(self):
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)


CELLS_DONE = b'{"cells_done": true}\n'  # the runner's line once its cells have run


def _read_until_exit(process, deadline, on_cells_done):
    """The runner's stdout until it exits, or until ``deadline`` (then it is killed):
    ``(bytes, walled)``. ``on_cells_done()`` is called when the runner says its cells ran."""
    out, walled, told = bytearray(), False, on_cells_done is None
    fd = process.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:  # the wall time: the runner and its sandbox die
            process.kill()
            walled = True
            out += process.stdout.read()
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 2**16)
        if not chunk:
            break
        out += chunk
        if not told and CELLS_DONE in out[-len(chunk) - len(CELLS_DONE) :]:
            told = True
            try:
                on_cells_done()
            except Exception:  # the next notebook's start is never this one's failure
                pass
    process.wait()
    return bytes(out), walled


def run_in_kernel(path, data, sources, limits, sandbox=None, runner=None, on_cells_done=None):
    """Write the snapshot into a fresh folder and run the runner there; its result dict.

    ``runner`` is a :class:`Runner` started ahead for this ``sandbox`` (else one is started
    now); ``on_cells_done()`` is called once its cells have run, while it cleans up (the
    grader starts the next notebook's runner then). The runner is killed (and with it the
    sandbox and every process in it) when the notebook passes its wall time, whatever
    the notebook did to its own processes.
    """
    wall = limits.get("wall") or limits["budget"] + WALL_EXTRA
    try:
        runner = runner or Runner(limits, sandbox)
    except OSError as err:
        message = f"the kernel runner failed: {_one_line(err, 200)}"
        return {"answers": {}, "cell_errors": [], "stop": {"cell": -1, "reason": "runner",
                "message": message}}  # fmt: skip
    process = runner.process
    try:
        (Path(runner.folder) / Path(path).name).write_bytes(data)
        for name, extra in limits.get("data_files", {}).get(str(Path(path).parent), {}).items():
            (Path(runner.folder) / name).write_bytes(extra)
        if runner.uid is not None:  # the kernel's own copies, as drop_to made its folders
            for name in os.listdir(runner.folder):
                os.chown(os.path.join(runner.folder, name), runner.uid, runner.uid)
        notebook = {
            "cells": sources,
            "cell_timeout": limits["cell_timeout"],
            "budget": limits["budget"],
        }
        try:
            process.stdin.write(json.dumps(notebook).encode() + b"\n")
            process.stdin.close()
        except OSError:  # the runner ended before (its kernel did not start): its result says
            pass
        if getattr(on_cells_done, "early", False):  # the next kernel starts beside the cells
            on_cells_done()
            on_cells_done = None
        try:
            raw, walled = _read_until_exit(process, time.monotonic() + wall, on_cells_done)
        finally:
            process.stdout.close()
            with RUNNERS_LOCK:
                RUNNERS.discard(process.pid)
        try:
            lines = [json.loads(line) for line in raw.decode("utf-8").strip().splitlines()]
        except ValueError as err:
            message = f"the kernel runner failed: {_one_line(err, 200)}"
            return {"answers": {}, "cell_errors": [], "stop": {"cell": -1, "reason": "runner",
                    "message": message}}  # fmt: skip
        if lines and "stop" in lines[-1]:
            return lines[-1]
        # the runner was killed: answers it sent before still count
        answers = {k: v for line in lines for k, v in line.get("partial", {}).items()}
        return {
            "answers": answers,
            "cell_errors": [],
            "stop": {"cell": -1, "reason": "wall" if walled else "runner"},
            "exit": process.returncode,
        }
    finally:
        runner.cleanup()
