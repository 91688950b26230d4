"""What the checker tests share, written once: ask a checker quietly and assert the one
line it gives; the softmax a learner writes, from which right and wrong answers are built;
random Q, K, V of given sizes; and the parser of a notebook's check cells.

The softmax here is written the way the solution notebooks write it, never taken from
attnlib, so a checker test cannot pass by comparing the package with itself.
"""

import json
import re
from pathlib import Path

import numpy as np

from attnlib.selfcheck import MISTAKES, check


def verdict(exercise_id, answer):
    """Check ``answer`` without printing and return the Feedback.

    Parameters
    ----------
    exercise_id : str
    answer : object
        What a learner would pass to ``check``.

    Returns
    -------
    attnlib.selfcheck.Feedback
    """
    return check(exercise_id, answer, quiet=True)


def assert_passed(exercise_id, answer):
    """Assert that ``answer`` passes, with the line ``✓ <id>: correct.``.

    Parameters
    ----------
    exercise_id : str
    answer : object
    """
    feedback = verdict(exercise_id, answer)
    assert feedback.passed, feedback.message
    assert (feedback.status, feedback.mistake) == ("passed", None)
    assert feedback.message == f"✓ {exercise_id}: correct."


def assert_mistake(exercise_id, answer, code):
    """Assert that ``answer`` is wrong and named as mistake ``code``, with that code's hint.

    Parameters
    ----------
    exercise_id : str
    answer : object
    code : str
        A key of ``attnlib.selfcheck.MISTAKES``.
    """
    feedback = verdict(exercise_id, answer)
    assert (feedback.passed, feedback.status, feedback.mistake) == (False, "wrong", code), (
        feedback.message
    )
    assert feedback.message == f"✗ {exercise_id}: wrong ({code}): {MISTAKES[code]}"


def assert_not_attempted(exercise_id, answer=...):
    """Assert that ``answer`` (the ``...`` placeholder by default) counts as not attempted.

    Parameters
    ----------
    exercise_id : str
    answer : object
        A placeholder: ``...``, or a function that returns ``...``.
    """
    feedback = verdict(exercise_id, answer)
    assert (feedback.status, feedback.passed, feedback.mistake) == ("not attempted", False, None)
    assert feedback.message == f"… {exercise_id}: not attempted yet"


def softmax_rows(x):
    """Softmax along the last axis, as a learner writes it: subtract the row max first.

    Parameters
    ----------
    x : ndarray of shape (..., n_k)

    Returns
    -------
    ndarray of shape (..., n_k)
        Each row is positive and sums to 1.

    Examples
    --------
    >>> softmax_rows(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    """
    z = x - x.max(axis=-1, keepdims=True)  # softmax ignores shifts, and exp overflows past ~709
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def naive_softmax(x, axis=-1):
    """Softmax without subtracting the max: the ``overflow`` mistake the checkers name.

    Parameters
    ----------
    x : ndarray
    axis : int
        The axis that sums to 1 (``axis=0`` is the ``wrong_axis`` mistake).

    Returns
    -------
    ndarray of the shape of ``x``
        ``nan`` where ``exp`` overflowed.
    """
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def random_qkv(seed, n_q=3, n_k=5, d_k=4, d_v=2, spread=1.0):
    """Random queries, keys and values with every size different by default.

    Parameters
    ----------
    seed : int
        For ``np.random.default_rng``.
    n_q, n_k, d_k, d_v : int
        Q is (n_q, d_k), K is (n_k, d_k), V is (n_k, d_v).
    spread : float
        Scale of Q and K (large values give large scores).

    Returns
    -------
    tuple of ndarray
        ``(Q, K, V)``.

    Examples
    --------
    >>> [a.shape for a in random_qkv(0)]
    [(3, 4), (5, 4), (5, 2)]
    """
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n_q, d_k)) * spread
    K = rng.normal(size=(n_k, d_k)) * spread
    V = rng.normal(size=(n_k, d_v))
    return Q, K, V


CHECK_LINE = re.compile(r'^check\("(\w+)", (.+?)\)$', re.MULTILINE)


def check_cells(path):
    """The check cells of a notebook: ``check("<id>", <answer>)`` on a line of its own.

    Parameters
    ----------
    path : str or Path
        An ``.ipynb`` file.

    Returns
    -------
    list of (int, str, str)
        ``(index among the code cells, exercise id, answer expression)``, in order;
        a call with more arguments (``quiet=True``) is not a check cell.

    Examples
    --------
    >>> check_cells(ROOT / "exercises" / "03_scoring.ipynb")[1]
    (3, 'rank_witness', 'z')
    """
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [
        (index, exercise_id, answer)
        for index, source in enumerate(code)
        for exercise_id, answer in CHECK_LINE.findall(source)
        if "quiet=" not in answer
    ]


ROOT = Path(__file__).resolve().parent.parent
