"""Checkers for lesson 02, queries, keys and values: one query by hand, a proof that a
score sees W_Q and W_K only through W_Q W_K^T (``query_key_matrix``), Q's shape, and a
repaired ``queries_keys_values``."""

import numpy as np

from .. import example as ex
from ..core import project
from ..selfcheck.exercise import Exercise

Q, K, V = ex.Q, ex.K, ex.V  # the worked example, (3, 2) each
SEEDS = ex.TOKENS.index("seeds")


Q_SEEDS = Exercise(
    id="q_seeds",
    lesson="02_queries_keys_values",
    kind="value",
    answer="q_seeds",
    hints=[
        "seeds' query is seeds' row of X times W_Q: one sum per column of W_Q.",
        "Column 1 of W_Q is (1, 1, 0, 0); seeds' row is (1, 1, 0, 1).",
        "Multiply seeds' row and column 1 entry by entry and add the four products; entry "
        "2 does the same with column 2 of W_Q.",
    ],
    solution=lambda: (
        "q_seeds = [1 * 1 + 1 * 1 + 0 * 0 + 1 * 0, 1 * 2 + 1 * 0 + 0 * 1 + 1 * 1]"
        f"  # {Q[SEEDS].tolist()}"
    ),
    expected=Q[SEEDS],
    mistakes={"swapped_qk": K[SEEDS], "used_w_v": V[SEEDS]},
    name="seeds' query",
)


Q_SHAPE = Exercise(
    id="q_shape",
    lesson="02_queries_keys_values",
    kind="choice",
    answer="q_shape",
    hints=[
        "(n, d_model) @ (d_model, d_k): the inner sizes must agree, and then they vanish.",
        "What is left is (n, d_k).",
    ],
    solution="q_shape = (10, 64)  # one row per token, d_k columns",
    expected=(10, 64),
    options=[(10, 64), (64, 10), (10, 512), (512, 64), (10, 512, 64)],
    mistakes={(64, 10): "tokens_as_columns", (10, 512): "kept_d_model"},
)


def _qkv(X, W_Q, W_K, W_V):
    return project(X, W_Q), project(X, W_K), project(X, W_V)


_rng = np.random.default_rng(2)
QKV_CASES = [
    (ex.X, ex.W_Q, ex.W_K, ex.W_V),  # the worked example
    # n = 5, d_model = 6, d_k = 3, d_v = 2: every size different
    (_rng.normal(size=(5, 6)), _rng.normal(size=(6, 3)), _rng.normal(size=(6, 3)),
     _rng.normal(size=(6, 2))),
]  # fmt: skip


QKV_FN = Exercise(
    id="qkv_fn",
    lesson="02_queries_keys_values",
    kind="function",
    answer="queries_keys_values",
    hints=[
        "Each projection is X @ (its own weight matrix).",
        "Check which weight matrix each line uses: queries come from W_Q, keys from W_K.",
    ],
    solution="def queries_keys_values(X, W_Q, W_K, W_V):\n"
    "    Q = X @ W_Q  # (n, d_model) @ (d_model, d_k) -> (n, d_k)\n"
    "    K = X @ W_K  # (n, d_model) @ (d_model, d_k) -> (n, d_k)\n"
    "    V = X @ W_V  # (n, d_model) @ (d_model, d_v) -> (n, d_v)\n"
    "    return Q, K, V",
    cases=QKV_CASES,
    reference=_qkv,
    mistakes=[
        ("swapped_qk", lambda X, W_Q, W_K, W_V: (X @ W_K, X @ W_Q, X @ W_V)),
        ("swapped_qk", lambda X, W_Q, W_K, W_V: (X @ W_K, X @ W_K, X @ W_V)),
        ("swapped_qk", lambda X, W_Q, W_K, W_V: (X @ W_K, X @ W_Q, (X @ W_V).T)),
        ("tokens_as_columns", lambda X, W_Q, W_K, W_V: (X @ W_Q, X @ W_K, (X @ W_V).T)),
    ],
    arg_names=("X", "W_Q", "W_K", "W_V"),
    result_names=("Q", "K", "V"),
)


# ---- query_key_matrix: q_i . k_j = x_i (W_Q W_K^T) x_j^T, tested on unequal sizes -----------
def _query_key_matrix(W_Q, W_K):
    return W_Q @ W_K.T  # (d_model, d_k) @ (d_k, d_model) -> (d_model, d_model)


_rng_m = np.random.default_rng(21)
QUERY_KEY_MATRIX_CASES = [
    (_rng_m.normal(size=(5, 3)), _rng_m.normal(size=(5, 3))),  # d_model = 5, d_k = 3
    (ex.W_Q, ex.W_K),  # the worked example: d_model = 4, d_k = 2
    (_rng_m.normal(size=(3, 6)), _rng_m.normal(size=(3, 6))),  # d_k = 6 > d_model = 3
]


QUERY_KEY_MATRIX = Exercise(
    id="query_key_matrix",
    lesson="02_queries_keys_values",
    kind="function",
    answer="query_key_matrix",
    hints=[
        "Write q_i = x_i W_Q and k_j = x_j W_K, then q_i . k_j = q_i k_j^T as a product of rows.",
        "(x_j W_K)^T = W_K^T x_j^T: the matrix left between x_i and x_j^T is a product of "
        "the two weight matrices.",
        "Mind the order: the matrix next to x_i turns a row of width d_model into one of "
        "width d_k, the one next to x_j^T turns it back. The product has shape (d_model, "
        "d_model).",
    ],
    solution="def query_key_matrix(W_Q, W_K):\n"
    "    return W_Q @ W_K.T  # (d_model, d_k) @ (d_k, d_model) -> (d_model, d_model)",
    cases=QUERY_KEY_MATRIX_CASES,
    reference=_query_key_matrix,
    mistakes=[
        ("transposed", lambda W_Q, W_K: W_K @ W_Q.T),  # scores k_i . q_j: the table transposed
        ("qk_gram_dk", lambda W_Q, W_K: W_Q.T @ W_K),
    ],
    arg_names=("W_Q", "W_K"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    Q_SEEDS,
    QUERY_KEY_MATRIX,
    Q_SHAPE,
    QKV_FN,
)
