"""Checkers for lesson 06, blending the values.

Ids: ``blend_birds_by_hand`` (birds' output from the document's rounded weights),
``blend_even_weights`` (predict, then check: equal weights give the mean value row),
``blend_fix`` (find the bug: the weights transposed before the product). The required
``output`` lives in formula.py. Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import softmax
from ..selfcheck.exercise import Exercise
from . import formula

Q, K, V, A = ex.Q, ex.K, ex.V, ex.A  # the worked example: (3, 2) each, A (n_q, n_k)
BIRDS = ex.TOKENS.index("birds")
ROUNDED = np.round(A, 3)  # the weights as the document prints them


# ---- blend_birds_by_hand ----------------------------------------------------------------------
BLEND_BIRDS_BY_HAND = Exercise(
    id="blend_birds_by_hand",
    lesson="06_blending_values",
    kind="value",
    answer="birds_output",
    hints=[
        "Entry 1 of the output uses entry 1 of each value row: 0, 4 and 2.",
        "0.013 × 0 + 0.882 × 4 + 0.106 × 2 for the first entry; the second uses 4, 2 and 4.",
    ],
    solution=lambda: (
        "birds_output = [0.013 * 0 + 0.882 * 4 + 0.106 * 2, 0.013 * 4 + 0.882 * 2 + 0.106 * 4]\n"
        f"{ROUNDED[BIRDS] @ V}"
    ),
    expected=ROUNDED[BIRDS] @ V,
    mistakes={
        "transposed": ROUNDED[:, BIRDS] @ V,  # birds' column of weights, not its row
        "unscaled": np.round(softmax(ex.S[BIRDS]), 3) @ V,
    },
    decimals=2,
    name="birds_output",
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
        "That is the mean of the value rows, column by column: (0 + 4 + 2) / 3, (4 + 2 + 4) / 3.",
    ],
    solution=lambda: f"even_output = V.mean(axis=0)\n{V.mean(axis=0)}",
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
        "return weights @ V  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)",
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
    BLEND_BIRDS_BY_HAND,
    formula.OUTPUT_EXERCISE,
    BLEND_EVEN_WEIGHTS,
    BLEND_FIX,
)
