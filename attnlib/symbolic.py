"""The attention steps as exact sympy objects.

Each function mirrors one in ``attnlib.core`` and returns a sympy object; nothing
here prints. Keep ``d_k`` a symbol to see the formula's shape, or pass a number to
get exact values such as ``9/sqrt(2)``.

>>> Q = matrix("q", 1, 2)
>>> K = matrix("k", 1, 2)
>>> qk_scores(Q, K)
Matrix([[k_11*q_11 + k_12*q_12]])
"""

from types import SimpleNamespace

import sympy as sp

from . import example as _example

d_k = sp.Symbol("d_k", positive=True, integer=True)


def matrix(name, n_rows, n_cols, start=1):
    """A matrix of symbols ``name_ij``, indexed from 1 as in a textbook, or from ``start``.

    Parameters
    ----------
    name : str
        The letter of the entries.
    n_rows, n_cols : int
        The shape.
    start : int, optional
        The index of the first row and column: 1 (the default, as in a textbook) or 0, for a
        lesson that counts from 0 as numpy does.

    Examples
    --------
    >>> matrix("x", 2, 2)
    Matrix([
    [x_11, x_12],
    [x_21, x_22]])
    >>> matrix("q", 1, 3, start=0)
    Matrix([[q_00, q_01, q_02]])
    """
    if start not in (0, 1):
        raise ValueError(f"matrix: start must be 0 or 1, got {start!r}.")
    return sp.Matrix(
        n_rows, n_cols, lambda i, j: sp.Symbol(f"{name}_{i + start}{j + start}", real=True)
    )


def project(X, W):
    """``X W`` for sympy matrices: each entry is a sum over d_model."""
    return X * W  # (n, d_model) * (d_model, d_out) -> (n, d_out)


def qk_scores(Q, K):
    """``Q K^T``: entry [i, j] is the dot product of query i with key j."""
    return Q * K.T  # (n_q, d_k) * (d_k, n_k) -> (n_q, n_k)


def scale_scores(S, d_k=d_k):
    """``S / sqrt(d_k)``; ``d_k`` stays a symbol unless a number is given.

    Examples
    --------
    >>> scale_scores(sp.Matrix([[9]]), 2)
    Matrix([[9*sqrt(2)/2]])
    """
    return S / sp.sqrt(d_k)


def softmax(S):
    """Row-wise softmax of a sympy matrix, exact (no floating point).

    Examples
    --------
    >>> softmax(sp.Matrix([[0, 0]]))
    Matrix([[1/2, 1/2]])
    """
    E = S.applyfunc(sp.exp)
    return sp.Matrix(S.rows, S.cols, lambda i, j: E[i, j] / sum(E.row(i)))


def attention(Q, K, V, d_k=None):
    """``softmax(Q K^T / sqrt(d_k)) V``, exact; d_k defaults to the width of Q."""
    A = softmax(scale_scores(qk_scores(Q, K), Q.cols if d_k is None else d_k))
    return A * V  # (n_q, n_k) * (n_k, d_v) -> (n_q, d_v)


def worked_example():
    """The worked example, every step exact.

    Returns
    -------
    SimpleNamespace
        ``X, W_Q, W_K, W_V, Q, K, V, S, S_scaled, A, output`` as sympy matrices.

    Examples
    --------
    >>> ex = worked_example()
    >>> ex.S_scaled[0, 1]
    9*sqrt(2)/2
    >>> round(float(ex.output[0, 0]), 2)
    3.74
    """
    as_exact = lambda M: sp.Matrix(M.astype(int).tolist())  # noqa: E731
    X, W_Q, W_K, W_V = (as_exact(M) for M in (_example.X, _example.W_Q, _example.W_K, _example.W_V))
    Q, K, V = project(X, W_Q), project(X, W_K), project(X, W_V)
    S = qk_scores(Q, K)
    S_scaled = scale_scores(S, K.cols)
    A = softmax(S_scaled)
    return SimpleNamespace(
        X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V, S=S, S_scaled=S_scaled, A=A, output=A * V
    )


def to_numpy(M):
    """Evaluate a sympy matrix of numbers to a float64 ndarray."""
    import numpy as np

    return np.array(M.evalf(30).tolist(), dtype=np.float64)
