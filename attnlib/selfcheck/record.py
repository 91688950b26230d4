"""What ``check(exercise_id, answer)`` hands to a judge: the answer as data.

Both places that judge an answer turn it into data here, with the same code, so they
judge the same thing: a learner's own ``check`` (self-study, judged at once) and the
kernel of a notebook being graded by ``attnlib check`` (which has no answer key: it
only records the data and sends it to the grader, who judges it in its own process).

``answer_data(kind, cases, arg_names, answer)``:

- a function exercise needs a function: it is called on ``cases`` in a child process
  (:func:`~attnlib.selfcheck.run.call_cases`), and its per-input records are the data;
  anything else but ``...`` or ``None`` is refused (a list of records too);
- a proof's sympy expression is evaluated at ``cases`` the same way;
- plain data (numbers, strings, numpy arrays, lists and tuples of those) goes through
  :mod:`~attnlib.selfcheck.wire`;
- any other object becomes numbers in a child process, under the same time limit.

>>> answer_data("value", None, (), [1, 2.5])
[1, 2.5]
>>> answer_data("function", [(2,)], (), lambda x: x + 1)
[{'ok': 3}]
>>> answer_data("function", [(2,)], (), [{"ok": 3}])["refused"]
'expected a function (def ...), got a list.'

While grading, :func:`send` publishes ``{"exercise": id, "data": wire text}`` as a
display message of type :data:`MIME` on the kernel's iopub channel (a capture of the
cell's output does not stop it); the grader's runner collects it.
"""

import numpy as np

from . import wire
from .run import TIME_LIMIT, call_cases, expression_function

MIME = "application/vnd.attnlib.answer+json"
_PLAIN = (int, float, str, bool, type(None), type(Ellipsis), np.bool_, np.integer, np.floating)


def _plain(value, depth=0):
    """True for numbers, strings, numpy arrays of numbers and lists/tuples of those: data
    that becomes wire text without running any code the learner wrote."""
    if type(value) in _PLAIN or isinstance(value, (np.integer, np.floating, np.bool_)):
        return True
    if type(value) is np.ndarray:
        return value.dtype.kind in "biufc"
    if type(value) in (list, tuple) and depth < 32:
        return all(_plain(v, depth + 1) for v in value)
    return False


def answer_data(kind, cases, arg_names, answer, seconds=None):
    """A learner's answer as the data a judge takes (see the module docstring).

    Parameters
    ----------
    kind : {"value", "tuple", "choice", "function", "proof"}
    cases : sequence of tuple or None
        The inputs a function is called on, or the points a proof is evaluated at.
    arg_names : sequence of str
        A proof's symbol names, in the order of each case's values.
    answer : object
        What the learner passed to ``check``.
    seconds : float, optional
        Time limit per call (default ``TIME_LIMIT``).
    """
    seconds = TIME_LIMIT if seconds is None else seconds
    if kind == "function" and callable(answer):
        return call_cases(answer, cases, seconds)
    if kind == "function" and answer is not Ellipsis and answer is not None:
        return wire.Refused(f"expected a function (def ...), got {wire.describe(answer)}.")
    if kind == "proof" and answer is not Ellipsis and answer is not None:
        # the expression is evaluated here, at the exercise's points: the judge gets numbers
        return call_cases(expression_function(answer, tuple(arg_names or ())), cases, seconds)
    if _plain(answer):
        return wire.decode(wire.encode(answer))
    # any other object (a sympy matrix, or one whose __array__ may never return) becomes
    # numbers in a child process, under the same time limit as a function
    (result,) = call_cases(lambda: answer, [()], seconds)
    if "ok" in result:
        return result["ok"]
    if "timeout" in result:
        return wire.Refused(f"your answer took longer than {seconds:g} s to turn into numbers.")
    reason = result.get("error") or f"it ended the process (exit {result.get('exit')})"
    return wire.Refused(f"your answer could not be turned into numbers: {reason}.")


def unanswered(kind, data):
    """True when ``data`` is still the notebook's placeholder: the judge says "not attempted".

    The same rule as :func:`~attnlib.selfcheck.judge.is_placeholder` (which a graded
    kernel does not have): ``...`` or ``None``, a list or tuple holding ``...``, or, for a
    function or a proof, a first result that is or holds ``...``. It needs no answer key,
    so a graded kernel knows it as self-study does.

    >>> unanswered("value", ...), unanswered("value", [1, ...]), unanswered("value", [1, 2])
    (True, True, False)
    >>> unanswered("function", [{"ok": ...}]), unanswered("function", [{"ok": 3}])
    (True, False)
    """
    if kind in ("function", "proof"):
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            return data is Ellipsis or data is None
        return "ok" in data[0] and _holds_ellipsis(data[0]["ok"])
    return data is None or _holds_ellipsis(data)


def _holds_ellipsis(value, depth=0):
    if value is Ellipsis or (type(value) is dict and value == {"ellipsis": True}):
        return True
    if isinstance(value, (list, tuple)) and depth < 32:
        return any(_holds_ellipsis(v, depth + 1) for v in value)
    return False


def send(exercise_id, data):
    """Publish one answer for the grader (a display message of type :data:`MIME`).

    The message goes straight to the kernel's iopub channel, past the shell's display
    publisher: inside ``%%capture`` or ``capture_output()`` that publisher is the
    capture's, which would keep the answer from the grader (the learner saw ✓ in
    self-study, the grader would record "not attempted"). Outside a kernel (a plain
    IPython) it falls back to ``publish_display_data``.
    """
    payload = {"exercise": str(exercise_id), "data": wire.encode(data)}
    bundle = {MIME: payload, "text/plain": f"· {exercise_id}: answer recorded"}
    kernel = _kernel()
    if kernel is None:
        from IPython.display import publish_display_data

        publish_display_data(bundle)
        return
    content = {"data": bundle, "metadata": {}, "transient": {}}
    parent = kernel.get_parent("shell")  # the cell being run: its output area shows the line
    kernel.session.send(kernel.iopub_socket, "display_data", content, parent, ident=b"display_data")


def _kernel():
    """The running ipykernel (with its session and iopub socket), or None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    needed = ("session", "iopub_socket", "get_parent")
    return kernel if all(hasattr(kernel, name) for name in needed) else None
