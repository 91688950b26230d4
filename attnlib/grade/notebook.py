"""Grade one handed-in notebook: read it as data, run its cells, judge what comes back.

The grader never trusts the file or the kernel for a verdict. It reads the notebook's
JSON itself (a broken file is one error row, not a crash); takes the list of exercises
from the course registry by the file's name; runs every code cell from its source in a
fresh kernel (:mod:`attnlib.grade.runner`), with its own capture cell after each check
cell, which sends the answer back as wire data framed by a random nonce; and judges the
decoded data in this process with the exercise's expected values.
"""

import json
import re
import secrets
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
CHECK_CALL = re.compile(r"""\bcheck\(\s*(['"])(\w+)\1""")
RUNNER = Path(__file__).with_name("runner.py")
# a kernel can fail to start when another grabs one of its free ports first (-j N)
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


def capture_code(exercise, nonce):
    """The grader's own cell that sends ``exercise``'s answer back as wire data.

    It evaluates the exercise's canonical answer expression in the student's namespace,
    calls a function answer on the grader's inputs in a child process
    (``run.call_cases``), evaluates a proof's sympy answer at the grader's points the same
    way (``run.expression_function``), and prints the envelope
    ``{"ok": wire_text}`` or ``{"error": reason}``, framed by ``@@nonce@@``.
    """
    from attnlib.selfcheck import wire

    name = f"_attnlib_capture_{nonce}"
    frame = f"@@{nonce}@@"
    called = exercise.kind in ("function", "proof")
    cases = wire.encode(tuple(exercise.cases)) if called else "null"
    names = tuple(exercise.arg_names or ())
    return f"""{name}_answer = lambda: ({exercise.answer})


def {name}():
    import json as _json
    import sys as _sys

    try:
        from attnlib.selfcheck import run as _run, wire as _wire

        try:
            _value = {name}_answer()
        except BaseException as _err:
            _envelope = {{"error": "the answer {exercise.answer} could not be read: "
                         + type(_err).__name__ + ": " + str(_err)}}
        else:
            if {exercise.kind == "function"!r} and callable(_value):
                _value = _run.call_cases(_value, _wire.decode({cases!r}))
            elif {exercise.kind == "proof"!r} and _value is not None and _value is not ...:
                # a sympy answer: evaluated here at the grader's points, only numbers go back
                _value = _run.call_cases(
                    _run.expression_function(_value, {names!r}), _wire.decode({cases!r})
                )
            _envelope = {{"ok": _wire.encode(_value)}}
    except BaseException as _err:
        _envelope = {{"error": "the answer could not be sent: " + type(_err).__name__}}
    _sys.stdout.write({frame!r} + _json.dumps(_envelope) + {frame!r})
    _sys.stdout.flush()


{name}()
del {name}, {name}_answer
"""


def _feedback_row(notebook, exercise_id, feedback):
    status = getattr(feedback, "status", None)
    if status not in STATUSES:
        status = "passed" if feedback.passed else "wrong"
    return row(notebook, exercise_id, status, feedback.mistake, feedback.message)


def judge_capture(notebook, exercise, text):
    """Decode the kernel's envelope in this process and judge it; one row."""
    from attnlib.selfcheck import wire

    try:
        envelope = json.loads(text)
        if not isinstance(envelope, dict) or len(envelope) != 1:
            raise ValueError("not an envelope")
        if "error" in envelope:
            return row(notebook, exercise.id, "error", message=_one_line(envelope["error"]))
        value = wire.decode(envelope["ok"])
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        return row(notebook, exercise.id, "error", message=f"malformed answer data: {err}")
    try:
        feedback = exercise.judge(value)
    except Exception as err:  # judge() promises never to raise; say so if it does
        return row(notebook, exercise.id, "error", message=f"the judge failed: {err!r}")
    return _feedback_row(notebook, exercise.id, feedback)


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
    if reason == "capture":
        return f"the answer sent after {where} was too large"
    return "the kernel did not start"


def grade_notebook(path, data, registry, limits):
    """Grade one notebook from its snapshot ``data`` (bytes); return a result dict."""
    started = time.monotonic()
    result = {"notebook": str(path), "rows": [], "unknown_ids": [], "cell_errors": []}
    rows = result["rows"]
    try:
        cells = code_cells(data)
    except NotANotebook as err:
        rows.append(row(path, NOTEBOOK, "error", message=f"not gradable: {err}"))
        return result
    stem = Path(path).stem
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
    check_cell = {}  # exercise id -> index of the last code cell that checks it
    for index, (_, source) in enumerate(cells):
        for match in CHECK_CALL.finditer(source):
            if match.group(2) in wanted:
                check_cell[match.group(2)] = index
            elif match.group(2) not in result["unknown_ids"]:
                result["unknown_ids"].append(match.group(2))
    nonce = secrets.token_hex(16)  # unknown to the notebook until its first capture cell
    captures = {}
    for ex in exercises:
        if ex.id in check_cell:
            captures.setdefault(str(check_cell[ex.id]), []).append([ex.id, capture_code(ex, nonce)])
    if captures:
        for _ in range(START_ATTEMPTS):  # a kernel that never started ran no cell: try again
            output = run_in_kernel(path, data, [s for _, s in cells], captures, nonce, limits)
            if (output.get("stop") or {}).get("reason") != "start":
                break
    else:
        output = {"captured": {}, "capture_errors": {}, "cell_errors": [], "stop": None}
    cell_error = {index: reason for index, reason in output.get("cell_errors", [])}
    result["cell_errors"] = [
        [cells[i][0], reason] for i, reason in output.get("cell_errors", []) if i < len(cells)
    ]
    result["cell_seconds"] = output.get("cell_seconds", 0.0)
    stop = output.get("stop")
    reason = _stop_reason(stop, cells, limits, output.get("exit")) if stop else None
    for ex in exercises:
        if ex.id not in check_cell:
            message = f'no cell calls check("{ex.id}", ...): the check cell was removed'
            rows.append(row(path, ex.id, "missing", message=message))
        elif ex.id in output["captured"]:
            rows.append(judge_capture(path, ex, output["captured"][ex.id]))
        elif ex.id in output["capture_errors"]:
            index = check_cell[ex.id]
            message = output["capture_errors"][ex.id]
            if index in cell_error:
                message = f"cell {cells[index][0]} raised {cell_error[index]}"
            rows.append(row(path, ex.id, "error", message=_one_line(message)))
        else:
            rows.append(row(path, ex.id, "not reached", message=f"not reached: {reason}"))
    if reason:
        rows.append(row(path, NOTEBOOK, "error", message=reason))
    result["seconds"] = time.monotonic() - started
    return result


def run_in_kernel(path, data, sources, captures, nonce, limits):
    """Write the snapshot into a fresh folder and run the runner there; its result dict."""
    job = {
        "cells": sources,
        "captures": captures,
        "nonce": f"@@{nonce}@@",
        "cell_timeout": limits["cell_timeout"],
        "budget": limits["budget"],
        "output_cap": limits["output_cap"],
    }
    folder = tempfile.mkdtemp(prefix="attnlib-grade-")  # the kernel's working directory
    job["private"] = tempfile.mkdtemp(prefix="attnlib-runner-")  # removed even if it is killed
    try:
        (Path(folder) / Path(path).name).write_bytes(data)
        try:
            with RUNNERS_LOCK:  # a sweep never takes a runner just started for an orphan
                runner = subprocess.Popen(
                    [sys.executable, "-I", str(RUNNER)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    cwd=folder,
                )
                RUNNERS.add(runner.pid)
            try:
                out, _ = runner.communicate(json.dumps(job), timeout=limits["budget"] + 120)
            except subprocess.TimeoutExpired:  # the runner keeps its own limits first
                runner.kill()
                out, _ = runner.communicate()
            finally:
                with RUNNERS_LOCK:
                    RUNNERS.discard(runner.pid)
            lines = [json.loads(line) for line in out.strip().splitlines()]
            if lines and "stop" in lines[-1]:
                return lines[-1]
            # the runner was killed (by the notebook): answers it sent before still count
            captured = {k: v for line in lines for k, v in line.get("partial", {}).items()}
            return {
                "captured": captured,
                "capture_errors": {},
                "cell_errors": [],
                "stop": {"cell": -1, "reason": "runner"},
                "exit": runner.returncode,
            }
        except (OSError, ValueError) as err:
            message = f"the kernel runner failed: {_one_line(err, 200)}"
            return {
                "captured": {},
                "capture_errors": dict.fromkeys(
                    (i for c in captures.values() for i, _ in c), message
                ),
                "cell_errors": [],
                "stop": None,
            }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(job["private"], ignore_errors=True)
