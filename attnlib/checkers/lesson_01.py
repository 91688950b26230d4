"""Checkers for lesson 01, words to vectors: build X, its shape, a column, embed()."""

import numpy as np

from .. import example as ex
from ..selfcheck.exercise import Exercise

VECTORS = {token: ex.X[i] for i, token in enumerate(ex.TOKENS)}


X_MATRIX = Exercise(
    id="x_matrix",
    lesson="01_words_to_vectors",
    kind="value",
    answer="X",
    hints=[
        "One row per token, in the sentence's order.",
        "X = np.array([birds' vector, eat's vector, seeds' vector]), shape (3, 4).",
    ],
    solution=lambda: f"X = np.array([[1, 0, 2, 0], [0, 2, 0, 1], [1, 1, 0, 1]])\n{ex.X}",
    expected=ex.X,
    mistakes={"tokens_as_columns": ex.X.T, "rows_out_of_order": ex.X[[1, 0, 2]]},
    name="X",
)


X_SHAPE = Exercise(
    id="x_shape",
    lesson="01_words_to_vectors",
    kind="choice",
    answer="predicted_shape",
    hints=[
        "The first number counts rows (tokens), the second counts columns (features).",
        "Seven tokens of six numbers each: (7, 6).",
    ],
    solution="(7, 6): n = 7 rows, d_model = 6 columns",
    expected=(7, 6),
    options=[(7, 6), (6, 7), (7,), (6,), (42,)],
    mistakes={(6, 7): "tokens_as_columns"},
)


FEATURE_COLUMN = Exercise(
    id="feature_column",
    lesson="01_words_to_vectors",
    kind="value",
    answer="column",
    hints=[
        "A feature is a column: pick every row and one column.",
        "dim 3 in the printed table is index 2 in numpy: X[:, 2].",
    ],
    solution=lambda: f"X[:, 2]\n{ex.X[:, 2]}",
    expected=ex.X[:, 2],
    mistakes=[
        ("row_not_column", ex.X[2]),
        ("off_by_one", ex.X[:, 3]),
        ("row_not_column", ex.X[3 - 1]),
    ],
    name="the column",
)


def _embed(tokens, table):
    return np.array([table[token] for token in tokens], dtype=np.float64)  # (n, d_model)


_rng = np.random.default_rng(1)
_TABLE_6 = {word: _rng.integers(-3, 4, size=6).astype(float) for word in "a b c d e".split()}
EMBED_CASES = [
    (list(ex.TOKENS), VECTORS),
    (["seeds", "birds", "eat", "eat"], VECTORS),  # another order, a repeated token
    (["e", "c", "a", "b", "d"], _TABLE_6),  # d_model = 6
    (["b", "b"], _TABLE_6),
]


def _rows_in_table_order(tokens, table):
    return np.array(list(table.values()), dtype=np.float64)


EMBED = Exercise(
    id="embed",
    lesson="01_words_to_vectors",
    kind="function",
    answer="embed",
    hints=[
        "Look each token up in the table, in the order of the tokens.",
        "Stack the vectors as rows: np.array([table[t] for t in tokens]).",
    ],
    solution="def embed(tokens, table):\n"
    "    return np.array([table[token] for token in tokens], dtype=float)  # (n, d_model)",
    cases=EMBED_CASES,
    reference=_embed,
    mistakes=[
        ("tokens_as_columns", lambda tokens, table: _embed(tokens, table).T),
        ("rows_out_of_order", _rows_in_table_order),
    ],
    arg_names=("tokens", "table"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    X_MATRIX,
    X_SHAPE,
    FEATURE_COLUMN,
    EMBED,
)
