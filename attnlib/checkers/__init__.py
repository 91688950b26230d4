"""The course's exercises as data, one module per lesson.

``lesson_NN.py`` holds ``EXERCISES``, a tuple of :class:`attnlib.selfcheck.Exercise` in
the order of the exercise notebook's check cells; ``formula.py`` holds the
exercises of the formula that a lesson other than their own leans on (``softmax``,
``attention``), which the lessons list where their notebooks check them.
Nothing here registers itself: :mod:`attnlib.selfcheck.registry` imports exactly the
lessons it lists, so a file dropped into this folder is never read.

This file holds what several lessons check for in the same way: the reference
self-attention and the learner's mistakes that more than one exercise names.
"""

import numpy as np

from ..core import attention_weights, project, softmax


def naive_softmax(x, axis=-1):
    """Softmax without subtracting the max first: the ``overflow`` mistake.

    Parameters
    ----------
    x : ndarray
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray of the shape of ``x``
        ``nan`` wherever ``exp`` overflowed (scores past ~709).

    Examples
    --------
    >>> naive_softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    """
    e = np.exp(x)  # no maximum subtracted
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(X, W_Q, W_K, W_V):
    """Self-attention from the tokens and the three weight matrices: the reference answer.

    Parameters
    ----------
    X : ndarray of shape (n, d_model)
    W_Q, W_K : ndarray of shape (d_model, d_k)
    W_V : ndarray of shape (d_model, d_v)

    Returns
    -------
    ndarray of shape (n, d_v)
    """
    Q, K, V = project(X, W_Q), project(X, W_K), project(X, W_V)
    return attention_weights(Q, K) @ V  # (n, n) @ (n, d_v) -> (n, d_v)


def self_attention_with(
    q_from="Q", k_from="K", divisor="d_k", normalise=softmax, transpose_weights=False
):
    """A self-attention that makes one mistake, for ``check_function``'s ``mistakes``.

    Parameters
    ----------
    q_from, k_from : {"Q", "K"}
        Which weight matrix, W_Q or W_K, makes the queries and which the keys.
    divisor : {"d_k", "d_model", "d_v", "none", "d_k itself", "times"}
        The divisor applied to the scores: sqrt(d_k) (right), the root of the wrong width,
        1, d_k without the root, or 1 / sqrt(d_k) (multiplied instead of divided).
    normalise : callable
        Turns the divided scores into weights, e.g. :func:`naive_softmax`.
    transpose_weights : bool
        Use the weights transposed.

    Returns
    -------
    callable
        ``variant(X, W_Q, W_K, W_V) -> ndarray of shape (n, d_v)``.
    """

    def variant(X, W_Q, W_K, W_V):
        W = {"Q": W_Q, "K": W_K}
        Q, K, V = X @ W[q_from], X @ W[k_from], X @ W_V
        d = {
            "d_k": np.sqrt(Q.shape[-1]),
            "d_model": np.sqrt(X.shape[-1]),
            "d_v": np.sqrt(V.shape[-1]),
            "none": 1.0,
            "d_k itself": Q.shape[-1],
            "times": 1 / np.sqrt(Q.shape[-1]),
        }[divisor]
        A = normalise(Q @ K.T / d)
        return (A.T if transpose_weights else A) @ V

    return variant


# The slips of the scale and softmax steps, in the order check_function tries them: both
# formula_self_attention (lesson 07) and sqrt_fix_scaled_twice (lesson 08) name them.
SCALE_SOFTMAX_MISTAKES = [
    ("wrong_d", self_attention_with(divisor="d_model")),
    ("wrong_d", self_attention_with(divisor="d_v")),
    ("unscaled", self_attention_with(divisor="none")),
    ("divided_by_d_k", self_attention_with(divisor="d_k itself")),
    ("multiplied", self_attention_with(divisor="times")),
    ("wrong_axis", self_attention_with(normalise=lambda S: softmax(S, axis=0))),
    ("overflow", self_attention_with(normalise=naive_softmax)),
]


def widened(case, arg, factor):
    """``case`` with argument ``arg`` multiplied by ``factor``: the wide case every
    function about softmax or attention adds.

    Softmax may subtract any number shared by a row, so on small scores a softmax that
    subtracts the row's min, mean or first entry gives the right weights; only past a
    spread of 709 within one row does ``exp`` overflow for those shifts (inf / inf = nan)
    while the row max still works. Each softmax-like exercise therefore adds one of its
    cases with the scores (through a query, a weight matrix or a width) made wide;
    ``tests/test_checks_rules.py`` finds every such exercise and holds it to that.

    Parameters
    ----------
    case : tuple
        The arguments of one call.
    arg : int
        Which argument to multiply (it keeps its dtype).
    factor : float

    Returns
    -------
    tuple

    Examples
    --------
    >>> widened((np.array([1.0, 2.0]), 4), 0, 500)
    (array([ 500., 1000.]), 4)
    """
    case = list(case)
    value = case[arg]
    if isinstance(value, np.ndarray):
        case[arg] = (value * factor).astype(value.dtype)
    else:
        case[arg] = value * factor
    return tuple(case)
