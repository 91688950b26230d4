"""Checkers for lesson 06, blending the values.

Ids: ``blend_find_weights`` (transfer, by hand: the weights that give an output),
``blend_value_change`` (transfer: the output is linear in V and the weights do not see V),
``blend_even_weights`` (predict, then check: equal weights give the mean value row),
``blend_fix`` (find the bug: the weights transposed before the product). Expected answers
come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import softmax
from ..selfcheck.exercise import Exercise

Q, K, V, A = ex.Q, ex.K, ex.V, ex.A  # the worked example: (3, 2) each, A (n_q, n_k)
EAT = ex.TOKENS.index("eat")


# ---- blend_find_weights: which weights give the output (2.2, 3.2)? ----------------------------
TARGET = np.array([2.2, 3.2])  # (d_v,)
# two equations from the output's entries, one from the weights summing to 1
_SYSTEM = np.vstack([V.T, np.ones(V.shape[0])])  # (d_v + 1, n_k) = (3, 3)
FOUND_WEIGHTS = np.linalg.solve(_SYSTEM, np.append(TARGET, 1.0))  # (n_k,)

BLEND_FIND_WEIGHTS = Exercise(
    id="blend_find_weights",
    lesson="06_blending_values",
    kind="value",
    answer="found_weights",
    hints=[
        "Write the output as w_1 (0, 4) + w_2 (4, 2) + w_3 (2, 4): one equation per entry.",
        "Two equations are not enough for three weights: a row of weights also sums to 1.",
        "The first entries give 4 w_2 + 2 w_3 = 2.2. Write the second entries' equation "
        "the same way, add w_1 + w_2 + w_3 = 1, and solve the three (np.linalg.solve does "
        "it).",
    ],
    solution=lambda: (
        "# 4 w_2 + 2 w_3 = 2.2; 4 w_1 + 2 w_2 + 4 w_3 = 3.2; w_1 + w_2 + w_3 = 1\n"
        f"found_weights = [0.3, 0.4, 0.3]  # {np.round(FOUND_WEIGHTS, 3).tolist()}"
    ),
    expected=FOUND_WEIGHTS,
    mistakes={
        # the smallest weights that give the output, without the sum to 1 (np.linalg.lstsq)
        "weights_sum_to_one": np.linalg.lstsq(V.T, TARGET, rcond=None)[0],
    },
    decimals=2,
    name="found_weights",
)


# ---- blend_value_change: eat's value moves by DELTA ------------------------------------------
DELTA = np.array([2.0, 10.0])  # eat's value (4, 2) becomes (6, 12)

BLEND_VALUE_CHANGE = Exercise(
    id="blend_value_change",
    lesson="06_blending_values",
    kind="value",
    answer="change",
    hints=[
        "The weights come from Q and K only: changing a value leaves every weight as it is.",
        "Row i of the output is sum_j A[i, j] v_j: only the term with eat's value changes.",
        "Query i's output changes by its weight on eat times eat's change (2, 10): the "
        "change is a table with one row per query and d_v columns.",
    ],
    solution=lambda: (
        "change = np.outer(weights[:, 1], [2, 10])  # (n_q,) outer (d_v,) -> (n_q, d_v)\n"
        f"# {np.round(np.outer(A[:, EAT], DELTA), 3).tolist()}"
    ),
    expected=np.outer(A[:, EAT], DELTA),  # (n_q, d_v)
    mistakes={
        "transposed": np.outer(A[EAT], DELTA),  # eat's row of weights, not its column
        "delta_not_weighted": np.tile(DELTA, (A.shape[0], 1)),
    },
    decimals=2,
    name="change",
)


# ---- blend_even_weights -----------------------------------------------------------------------
N_K = V.shape[0]  # 3 keys

BLEND_EVEN_WEIGHTS = Exercise(
    id="blend_even_weights",
    lesson="06_blending_values",
    kind="value",
    answer="even_output",
    hints=[
        "With weight 1/3 on each row, the blend is (v_1 + v_2 + v_3) / 3.",
        "That is the mean of the value rows, one column at a time: add the first entries "
        "of the three values and divide by 3, then do the same with the second entries.",
    ],
    solution=lambda: (
        "even_output = [(0 + 4 + 2) / 3, (4 + 2 + 4) / 3]"
        f"  # {np.round(V.mean(axis=0), 3).tolist()}"
    ),
    expected=np.full(N_K, 1 / N_K) @ V,  # (n_k,) @ (n_k, d_v) -> (d_v,)
    mistakes={"not_normalised": np.ones(N_K) @ V},
    decimals=2,
    name="even_output",
)


# ---- blend_fix: repair weights.T @ V ---------------------------------------------------------
_rng = np.random.default_rng(6)
BLEND_CASES = [
    (A, V),  # the worked example: square weights, so the bug still runs
    (softmax(_rng.normal(size=(3, 5))), _rng.normal(size=(5, 2))),  # n_q = 3, n_k = 5, d_v = 2
    (softmax(_rng.normal(size=(4, 4))), _rng.normal(size=(4, 3))),  # square again, d_v = 3
]
BLEND_MISTAKES = [
    ("transposed", lambda A, V: A.T @ V),
    ("not_normalised", lambda A, V: np.ones_like(A) @ V),
]


BLEND_FIX = Exercise(
    id="blend_fix",
    lesson="06_blending_values",
    kind="function",
    answer="blend",
    hints=[
        "Row i of the output must blend V's rows with query i's weights: row i of the weights.",
        "weights.T puts a key's column where a query's row belongs.",
        "Test the fix with 3 queries and 5 keys: weights of shape (3, 5) and V of shape "
        "(5, 2) must give one row per query, shape (3, 2).",
    ],
    solution=(
        "def blend(weights, V):\n    return weights @ V  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)"
    ),
    cases=BLEND_CASES,
    reference=lambda A, V: A @ V,
    mistakes=BLEND_MISTAKES,
    arg_names=("weights", "V"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    BLEND_FIND_WEIGHTS,
    BLEND_VALUE_CHANGE,
    BLEND_EVEN_WEIGHTS,
    BLEND_FIX,
)
