"""The worked example: three tokens, d_model = 4, d_k = d_v = 2.

The inputs (``X``, ``W_Q``, ``W_K``, ``W_V``) are exact. Every table the source
document prints is kept in ``DOCUMENT`` exactly as printed, with the number of
decimals it is printed at, so a lesson can show its own result at that precision
and say whether it matches.

>>> DOCUMENT["scores"].values[0]
array([3., 9., 6.])
>>> compare("scores", [[3, 9, 6], [6, 4, 5], [6, 8, 7]])
matches the document: 9 of 9 values

The worked example's Q, K, V, scores ``S``, scaled scores, weights ``A`` and ``OUTPUT`` are
computed once here with ``attnlib.core``. Every array is read-only, so no notebook cell can
change what the checkers compare against:

>>> X[0, 0] = 5
Traceback (most recent call last):
...
ValueError: assignment destination is read-only
"""

from dataclasses import dataclass

import numpy as np

from .core import attention_weights, project, qk_scores, scale_scores

TOKENS = ("birds", "eat", "seeds")

X = np.array(
    [
        [1, 0, 2, 0],  # birds
        [0, 2, 0, 1],  # eat
        [1, 1, 0, 1],  # seeds
    ],
    dtype=np.float64,
)  # (n, d_model) = (3, 4)

W_Q = np.array([[1, 2], [1, 0], [0, 1], [0, 1]], dtype=np.float64)  # (d_model, d_k)
W_K = np.array([[1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float64)  # (d_model, d_k)
W_V = np.array([[0, 2], [2, 0], [0, 1], [0, 2]], dtype=np.float64)  # (d_model, d_v)

d_model, d_k, d_v = 4, 2, 2

# ---- the worked example computed once, with attnlib.core (never typed in) ------------------
Q, K, V = project(X, W_Q), project(X, W_K), project(X, W_V)  # (n, d_k), (n, d_k), (n, d_v)
S = qk_scores(Q, K)  # scores (n_q, n_k) = (3, 3)
SCALED = scale_scores(S, d_k)  # S / sqrt(d_k)
A = attention_weights(Q, K)  # softmax of each row of SCALED: weights, rows sum to 1
OUTPUT = A @ V  # (n_q, n_k) @ (n_k, d_v) -> (3, 2)


def _read_only(*arrays):
    """Freeze the example's arrays: ``X[:, :2] *= 10`` raises instead of changing them.

    A lesson that wants to change a copy says so: ``X = example.X.copy()``.
    """
    for array in arrays:
        array.flags.writeable = False


_read_only(X, W_Q, W_K, W_V, Q, K, V, S, SCALED, A, OUTPUT)


@dataclass(frozen=True)
class Printed:
    """A table as the document prints it.

    Attributes
    ----------
    title : str
        What the table holds, in the course's words.
    values : ndarray of shape (n_rows, n_cols)
        The numbers exactly as printed (already rounded).
    decimals : int
        How many decimals the document prints.
    rows, cols : tuple of str
        Row and column labels.
    """

    title: str
    values: np.ndarray
    decimals: int
    rows: tuple
    cols: tuple


def _printed(title, values, decimals, rows=TOKENS, cols=TOKENS):
    values = np.array(values, dtype=np.float64)
    _read_only(values)
    return Printed(title, values, decimals, tuple(rows), tuple(cols))


_D2 = ("dim 1", "dim 2")
_D4 = ("dim 1", "dim 2", "dim 3", "dim 4")

DOCUMENT = {
    "X": _printed("X, one row per token", X, 0, cols=_D4),
    "Q": _printed("Q = X W_Q", [[1, 4], [2, 1], [2, 3]], 0, cols=_D2),
    "K": _printed("K = X W_K", [[3, 0], [1, 2], [2, 1]], 0, cols=_D2),
    "V": _printed("V = X W_V", [[0, 4], [4, 2], [2, 4]], 0, cols=_D2),
    "scores": _printed("scores S = Q K^T", [[3, 9, 6], [6, 4, 5], [6, 8, 7]], 0),
    "sqrt_d_k": _printed("sqrt(d_k)", [[1.41]], 2, rows=("sqrt(d_k)",), cols=("value",)),
    "scaled_scores": _printed(
        "scaled scores S / sqrt(d_k)",
        [[2.12, 6.36, 4.24], [4.24, 2.83, 3.54], [4.24, 5.66, 4.95]],
        2,
    ),
    "softmax_row1_unscaled": _printed(
        "softmax of birds' scores, unscaled", [[0.002, 0.950, 0.047]], 3, rows=("birds",)
    ),
    "softmax_row1_scaled": _printed(
        "softmax of birds' scores, scaled", [[0.013, 0.882, 0.106]], 3, rows=("birds",)
    ),
    "output": _printed(
        "output = weights V", [[3.74, 2.24], [1.13, 3.72], [2.87, 2.85]], 2, cols=_D2
    ),
}


def _fmt(value, decimals):
    return f"{value + 0.0:.{decimals}f}"  # + 0.0 turns -0.0 into 0.0


def format_table(values, decimals, rows, cols):
    """Lay out a matrix as text with labelled rows and columns.

    Examples
    --------
    >>> print(format_table([[1, 4]], 0, rows=["birds"], cols=["dim 1", "dim 2"]))
           dim 1  dim 2
    birds      1      4
    """
    values = np.asarray(values, dtype=np.float64).reshape(len(rows), len(cols))
    width = max(len(c) for c in cols)
    width = max([width] + [len(_fmt(v, decimals)) for v in values.ravel()])
    label = max(len(r) for r in rows)
    lines = [" " * label + "".join(f"  {c:>{width}}" for c in cols)]
    for r, row in zip(rows, values, strict=True):
        lines.append(f"{r:<{label}}" + "".join(f"  {_fmt(v, decimals):>{width}}" for v in row))
    return "\n".join(lines)


class Comparison:
    """The result of comparing a computed table with the document's.

    ``ok`` is True when every value, rounded to the document's decimals, equals
    the printed value. Its text is the one-line verdict a lesson shows.
    """

    def __init__(self, name, n_match, n, first_diff):
        self.name, self.n_match, self.n, self.first_diff = name, n_match, n, first_diff
        self.ok = n_match == n

    def __repr__(self):
        if self.ok:
            return f"matches the document: {self.n} of {self.n} value{'s' * (self.n != 1)}"
        (row, col), got, want = self.first_diff
        return (
            f"differs from the document: {self.n_match} of {self.n} values match; "
            f"[{row}, {col}] is {got}, the document prints {want}"
        )

    __str__ = __repr__


def compare(name, computed):
    """Compare a computed table with the document's, at the document's precision.

    Parameters
    ----------
    name : str
        A key of ``DOCUMENT``, e.g. ``"scaled_scores"``.
    computed : array_like
        The learner's or the lesson's result, unrounded.

    Returns
    -------
    Comparison
        Prints as ``matches the document: 9 of 9 values`` or names the first
        entry that differs.
    """
    if name not in DOCUMENT:
        raise ValueError(f"compare: no table {name!r}; the document prints {sorted(DOCUMENT)}.")
    doc = DOCUMENT[name]
    got = np.asarray(computed, dtype=np.float64)
    if got.size != doc.values.size:
        raise ValueError(
            f"compare: {name} has {doc.values.size} values in the document, got shape {got.shape}."
        )
    got = got.reshape(doc.values.shape)
    got_text = np.vectorize(lambda v: _fmt(v, doc.decimals))(got)
    want_text = np.vectorize(lambda v: _fmt(v, doc.decimals))(doc.values)
    same = got_text == want_text
    first = None
    if not same.all():
        index = tuple(int(i) for i in np.argwhere(~same)[0])
        first = (index, got_text[index], want_text[index])
    return Comparison(name, int(same.sum()), same.size, first)


def show(name, computed):
    """Print a computed table at the document's precision, then the verdict.

    Examples
    --------
    >>> show("Q", [[1, 4], [2, 1], [2, 3]])
    Q = X W_Q
           dim 1  dim 2
    birds      1      4
    eat        2      1
    seeds      2      3
    matches the document: 6 of 6 values
    """
    result = compare(name, computed)
    doc = DOCUMENT[name]
    print(doc.title)
    print(format_table(computed, doc.decimals, doc.rows, doc.cols))
    print(result)
