"""Checkers for lesson 01, words to vectors: build X, its shape, a column, embed(), and a
transfer task, one_hot() (X from a vocabulary instead of a table of vectors)."""

import numpy as np

from .. import example as ex
from ..selfcheck.contract import Domain, ResultType
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
    solution="X = np.array([[1, 0, 2, 0], [0, 2, 0, 1], [1, 1, 0, 1]], dtype=float)  # (3, 4)",
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
        "Count the tokens of the sentence in the exercise, then the numbers in one token's "
        "vector; rows come first.",
    ],
    solution="predicted_shape = (7, 6)  # n = 7 rows, d_model = 6 columns",
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
        "The printed table counts dims from 1, numpy counts indices from 0: a dim's index "
        "is one lower. In X[rows, column], a bare `:` picks every row.",
    ],
    solution=lambda: f"column = X[:, 2]  # {ex.X[:, 2].tolist()}: every row, index 2",
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


def _draw_embed(rng):
    """A table of non-integer floats (an int array would round them) for a vocabulary in no
    particular order, and a sentence shorter or longer than the table, with repeats."""
    words = list(rng.permutation(["seeds", "birds", "eat", "fly", "sing", "nest"]))
    d_model = int(rng.integers(2, 6))
    table = {str(w): np.round(rng.normal(size=d_model), 2) + 0.25 for w in words}
    tokens = [str(w) for w in rng.choice(words, size=int(rng.integers(1, 9)))]
    return tokens, table


def _rows_in_table_order(tokens, table):
    return np.array(list(table.values()), dtype=np.float64)


EMBED = Exercise(
    id="embed",
    lesson="01_words_to_vectors",
    kind="function",
    answer="embed",
    hints=[
        "Look each token up in the table, in the order of the tokens.",
        "Collect the looked-up vectors in a list, in order; np.array of a list of "
        "equal-length vectors stacks them as rows. Ask for floats with dtype=float.",
    ],
    solution="def embed(tokens, table):\n"
    "    return np.array([table[token] for token in tokens], dtype=float)  # (n, d_model)",
    cases=EMBED_CASES,
    domain=Domain(
        "tokens of any length (repeats allowed) and a table of float vectors of any width",
        _draw_embed,
        count=4,
        seed=11,
    ),
    constraints=(ResultType("f", "a float array, one row per token"),),
    reference=_embed,
    mistakes=[
        ("tokens_as_columns", lambda tokens, table: _embed(tokens, table).T),
        ("rows_out_of_order", _rows_in_table_order),
    ],
    arg_names=("tokens", "table"),
)


# ---- one_hot: the same stacking, with vectors made from a vocabulary -----------------------
def _one_hot(tokens, vocab):
    X = np.zeros((len(tokens), len(vocab)))  # (n, d_model) with d_model = len(vocab)
    for i, token in enumerate(tokens):
        X[i, vocab.index(token)] = 1.0
    return X


def _draw_one_hot(rng):
    """A vocabulary in no particular order (never sorted) and a sentence from it."""
    words = ["seeds", "birds", "eat", "fly", "sing", "nest", "ant"]
    vocab = [str(w) for w in rng.permutation(words)[: int(rng.integers(3, 8))]]
    if vocab == sorted(vocab):
        vocab = vocab[::-1]
    return [str(w) for w in rng.choice(vocab, size=int(rng.integers(1, 10)))], vocab


def _one_hot_sorted(tokens, vocab):
    return _one_hot(tokens, sorted(vocab))  # np.unique(vocab): the words sorted


ONE_HOT_CASES = [
    (["seeds", "birds", "eat", "eat"], ["birds", "eat", "seeds"]),  # n = 4 > len(vocab) = 3
    (["birds", "eat", "seeds"], ["seeds", "birds", "eat"]),  # a vocabulary not in order
    (["c", "a", "e", "a", "b"], list("abcdef")),  # n = 5, d_model = 6, a repeated token
    (["f"], list("abcdef")),  # one token
    (list(ex.TOKENS), list(ex.TOKENS)),  # the sentence itself: X is the identity
]


ONE_HOT = Exercise(
    id="one_hot",
    lesson="01_words_to_vectors",
    kind="function",
    answer="one_hot",
    hints=[
        "Every row is one token, as in X; its only 1 sits in the column of that word in vocab.",
        "Start from an all-zero array with one row per token and one column per word of "
        "vocab, then set one entry in each row.",
        "vocab.index(word) is the column of a word, whatever order vocab is in; "
        "enumerate(tokens) gives each row's position beside its token.",
    ],
    solution="def one_hot(tokens, vocab):\n"
    "    X = np.zeros((len(tokens), len(vocab)))  # (n, d_model) with d_model = len(vocab)\n"
    "    for i, token in enumerate(tokens):\n"
    "        X[i, vocab.index(token)] = 1.0\n"
    "    return X",
    cases=ONE_HOT_CASES,
    domain=Domain(
        "a vocabulary in any order and a sentence of any length drawn from it",
        _draw_one_hot,
        count=4,
        seed=12,
    ),
    # the text promises shape (n, len(vocab)) and the next cell prints it as an array: an
    # array of numbers (0/1 as floats or integers), never a list of lists or of objects
    constraints=(ResultType("fiu", "an array of numbers of shape (n, len(vocab))"),),
    reference=_one_hot,
    mistakes=[
        ("tokens_as_columns", lambda tokens, vocab: _one_hot(tokens, vocab).T),
        ("one_hot_sorted_vocab", _one_hot_sorted),
        ("one_hot_position", lambda tokens, vocab: np.eye(len(tokens), len(vocab))),
    ],
    arg_names=("tokens", "vocab"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    X_MATRIX,
    X_SHAPE,
    FEATURE_COLUMN,
    EMBED,
    ONE_HOT,
)
