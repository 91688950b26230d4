"""Call a learner's function on the checker's inputs in a child process, safely.

``call_cases(function, cases)`` forks the current process (so the function, defined in a
notebook, exists in the child as it is), calls it on each input there with its prints
and warnings going nowhere, and sends each result back over a pipe as JSON text made by
:mod:`attnlib.selfcheck.wire` (never pickle). The parent waits at most ``seconds`` per
input and kills the child when the limit passes, so no answer can hang the caller:
not an endless loop that swallows ``KeyboardInterrupt``, not a timer cancelled by the
learner, not an ``__array__`` that never returns. ``sys.exit`` and ``os._exit`` inside
the function end the child only and are reported.

The result is one record per input, exactly one of::

    {"ok": value}                   the function returned (value decoded from the wire)
    {"error": "TypeError: ..."}     it raised
    {"timeout": seconds}            it ran past the limit and was killed
    {"exit": code}                  it called sys.exit / os._exit

>>> import numpy as np
>>> call_cases(lambda x: x * 2, [(np.array([1.0, 2.0]),), (3,)])
[{'ok': array([2., 4.])}, {'ok': 6}]
>>> call_cases(lambda x: 1 / x, [(0,)])
[{'error': 'ZeroDivisionError: division by zero'}]
"""

import contextlib
import copy
import io
import json
import os
import select
import signal
import sys
import time
import warnings

import numpy as np

from . import wire

TIME_LIMIT = 5.0  # seconds a learner's function may run on one input
_NOT_RUN = "not run: your function {} on an earlier input"


def _one_line(err):
    text = f"{type(err).__name__}: {err}".splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _call(function, args):
    """One call in the child; the record as JSON-ready data."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value = function(*copy.deepcopy(tuple(args)))
            return {"ok": wire.to_data(value)}
    except SystemExit as stop:
        code = stop.code
        return {"exit": code if isinstance(code, int) and not isinstance(code, bool) else 1}
    except BaseException as err:  # noqa: BLE001 - the learner's exception, reported as data
        return {"error": _one_line(err)}


def _child(function, cases, write_fd):
    """Runs in the forked child: never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends the child at once
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdout = sys.stderr = io.StringIO()  # this process only: it is about to exit
        sys.stdin = io.StringIO()
        with os.fdopen(write_fd, "w", encoding="utf-8") as out:
            for args in cases:
                record = _call(function, args)
                try:
                    line = json.dumps(record, allow_nan=False, separators=(",", ":"))
                except (TypeError, ValueError) as err:
                    line = json.dumps({"error": f"the result could not be sent: {err}"})
                out.write(line + "\n")
                out.flush()
    except BaseException:  # noqa: BLE001 - the child must never fall back into the caller
        code = 70
    finally:
        os._exit(code)


def _record(line):
    try:
        obj = json.loads(line)
        (key,) = obj
    except (ValueError, TypeError):
        return {"error": "the child sent a malformed result"}
    if key == "ok":
        try:
            return {"ok": wire.from_data(obj["ok"])}
        except ValueError as err:
            return {"error": f"the result could not be read: {err}"}
    if key == "error" and isinstance(obj[key], str):
        return {"error": obj[key]}
    if key == "exit" and isinstance(obj[key], int):
        return {"exit": obj[key]}
    return {"error": "the child sent a malformed result"}


def _exit_code(pid):
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 1
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1


NO_TIME_LIMIT = (
    "note: in the browser (Pyodide) your function runs in this kernel with no time limit; "
    "if a check never ends, use Kernel > Restart Kernel"
)
_noted = []  # the note above is printed once per kernel


def _in_process(function, cases):
    """:func:`call_cases` where there is no fork: Windows, and Pyodide in the browser (its
    ``os.fork`` exists but fails with ENOSYS). The same records, with the learner's prints
    discarded as in the child, but no time limit; in the browser a note says so, once."""
    if sys.platform == "emscripten" and not _noted:
        _noted.append(True)
        print(NO_TIME_LIMIT)
    records = []
    for args in cases:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            record = _call(function, args)
        try:
            line = json.dumps(record, allow_nan=False)
        except (TypeError, ValueError) as err:
            line = json.dumps({"error": f"the result could not be sent: {err}"})
        records.append(_record(line))
        if "exit" in record:  # as in the child: the calls after an exit are not run
            why = "ended the process"
            records += [{"error": _NOT_RUN.format(why)}] * (len(cases) - len(records))
            break
    return records


def call_cases(function, cases, seconds=TIME_LIMIT):
    """Call ``function(*args)`` for each ``args`` in ``cases`` in a child process.

    Parameters
    ----------
    function : callable
        The learner's function.
    cases : sequence of tuple
        Argument tuples; each call gets deep copies.
    seconds : float
        The most one call may take; the child is killed when it passes.

    Returns
    -------
    list of dict
        One record per case: ``{"ok": value}``, ``{"error": "Name: message"}``,
        ``{"timeout": seconds}`` or ``{"exit": code}``; cases after a timeout or an exit
        are ``{"error": "not run: ..."}``.

    Notes
    -----
    Needs ``os.fork`` (Linux, macOS). Where it is missing (Windows) or fails (Pyodide in the
    browser) the function is called in this process instead: the same records, but no time
    limit.
    """
    cases = [tuple(args) for args in cases]
    if not hasattr(os, "fork") or sys.platform == "emscripten":
        return _in_process(function, cases)
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        _child(function, cases, write_fd)
    os.close(write_fd)
    results, buffer = [], b""
    try:
        deadline = time.monotonic() + seconds
        eof = False
        while len(results) < len(cases) and not eof:
            while b"\n" in buffer and len(results) < len(cases):
                line, buffer = buffer.split(b"\n", 1)
                results.append(_record(line.decode("utf-8", errors="replace")))
                deadline = time.monotonic() + seconds  # the next call starts now
            if len(results) == len(cases):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if ready:
                chunk = os.read(read_fd, 1 << 20)
                eof = not chunk
                buffer += chunk
        while b"\n" in buffer and len(results) < len(cases):
            line, buffer = buffer.split(b"\n", 1)
            results.append(_record(line.decode("utf-8", errors="replace")))
    finally:
        os.close(read_fd)
        finished = len(results) == len(cases)
        if not finished or not eof:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        code = _exit_code(pid)
    if len(results) < len(cases):
        if eof:  # the child ended in the middle of a call: os._exit or a crash
            results.append({"exit": code} if code >= 0 else {"error": f"killed by signal {-code}"})
            why = "ended the process"
        else:
            results.append({"timeout": seconds})
            why = "ran out of time"
        results += [{"error": _NOT_RUN.format(why)}] * (len(cases) - len(results))
    return results


def expression_function(expr, names):
    """A function of numbers that evaluates a sympy answer at one point: the "proof" kind.

    ``expression_function(expr, names)(*values)`` puts ``values[i]`` in for the symbol
    called ``names[i]`` (by name, so ``Symbol("p_1", positive=True)`` counts as ``p_1``)
    and returns a float, or a flat float array for a matrix or a list of expressions.
    It runs where the answer lives, the learner's kernel (through :func:`call_cases`):
    the judge only ever receives the numbers, never the expression or a string to parse.

    Parameters
    ----------
    expr : sympy expression, sympy matrix, number, or list of those
    names : sequence of str
        The names of the symbols the expression may use, in the order of ``values``.

    Returns
    -------
    callable
        Raises ``TypeError`` for a string (strings are never parsed) and ``NameError``
        for a symbol that is not one of ``names``.

    Examples
    --------
    >>> import sympy as sp
    >>> p_1, p_2 = sp.symbols("p_1 p_2", positive=True)
    >>> expression_function(p_1 * (1 - p_1 - p_2), ["p_1", "p_2"])(0.5, 0.25)
    0.125
    >>> expression_function([p_1, 2 * p_2], ["p_1", "p_2"])(1, 3)
    array([1., 6.])
    """
    names = tuple(names)

    def at(*values):
        import sympy as sp

        if isinstance(expr, (str, bytes)):
            raise TypeError("a string is not an expression: build it from sympy symbols")
        if isinstance(expr, (list, tuple)):
            e = sp.Matrix(list(expr))
        else:
            e = sp.sympify(expr, strict=True)
        point = dict(zip(names, values, strict=True))
        unknown = sorted({str(s) for s in e.free_symbols} - set(point))
        if unknown:
            raise NameError(
                f"the expression uses {', '.join(unknown)}; it may only use {', '.join(names)}"
            )
        e = e.subs({s: sp.Float(point[str(s)], 30) for s in e.free_symbols})
        if isinstance(e, sp.MatrixBase) or getattr(e, "shape", ()):
            return np.array(sp.Matrix(e).evalf(), dtype=np.float64).ravel()
        number = complex(e.evalf())
        if number.imag != 0:
            raise ValueError(f"the expression is not real at this point ({number})")
        return number.real

    return at
