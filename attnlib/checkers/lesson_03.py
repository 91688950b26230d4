"""Checkers for lesson 03, scoring: one score by hand, a repaired score loop, and a
prediction about doubled keys (the required ``scores`` lives in formula.py)."""

import numpy as np

from .. import example as ex
from ..core import qk_scores
from ..selfcheck.exercise import Exercise
from . import formula

Q, K, S = ex.Q, ex.K, ex.S  # the worked example: (3, 2), (3, 2), (n_q, n_k) = (3, 3)
EAT, SEEDS = ex.TOKENS.index("eat"), ex.TOKENS.index("seeds")


SCORE_EAT_SEEDS = Exercise(
    id="score_eat_seeds",
    lesson="03_scoring",
    kind="value",
    answer="score_eat_seeds",
    hints=[
        "The row is the query's token, the column is the key's token.",
        "eat's query is (2, 1) and seeds' key is (2, 1): multiply entry by entry and add.",
    ],
    solution=lambda: f"Q[1] @ K[2] = 2×2 + 1×1 = {S[EAT, SEEDS]:.0f}",
    expected=S[EAT, SEEDS],
    mistakes={"transposed": S[SEEDS, EAT]},
    name="the score",
)


def _scores_loop_bug(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            for m in range(Q.shape[1]):
                S[i, j] += Q[i, m] * K[i, m]  # the bug: K[i] instead of K[j]
    return S


_rng = np.random.default_rng(3)
SCORES_CASES = [
    (_rng.normal(size=(3, 4)), _rng.normal(size=(5, 4))),  # n_q = 3, n_k = 5, d_k = 4
    (Q, K),  # the worked example
    (_rng.normal(size=(5, 3)), _rng.normal(size=(2, 3))),  # more queries than keys
]


SCORES_LOOP = Exercise(
    id="scores_loop",
    lesson="03_scoring",
    kind="function",
    answer="scores_loop",
    hints=[
        "Print the loop's result next to Q @ K.T: what is true of every row of the wrong one?",
        "Each row of the broken result repeats one number: the key never changes with j.",
    ],
    solution="def scores_loop(Q, K):\n"
    "    S = np.zeros((Q.shape[0], K.shape[0]))  # (n_q, n_k)\n"
    "    for i in range(Q.shape[0]):  # each query\n"
    "        for j in range(K.shape[0]):  # each key\n"
    "            for m in range(Q.shape[1]):  # the dot product over d_k\n"
    "                S[i, j] += Q[i, m] * K[j, m]\n"
    "    return S",
    cases=SCORES_CASES,
    reference=qk_scores,
    mistakes=[
        ("loop_index", _scores_loop_bug),
        ("transposed", lambda Q, K: K @ Q.T),
    ],
    arg_names=("Q", "K"),
)


DOUBLE_KEYS = Exercise(
    id="double_keys",
    lesson="03_scoring",
    kind="choice",
    answer="prediction",
    hints=[
        "Write one score as a sum: q_1 k_1 + q_2 k_2.",
        "Replace every k by 2k and factor the 2 out.",
    ],
    solution="'doubled': every score is a sum of products with one key entry each",
    expected="doubled",
    options=["unchanged", "doubled", "quadrupled", "halved"],
    mistakes={"quadrupled": "scores_not_linear", "unchanged": "scores_not_linear"},
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SCORE_EAT_SEEDS,
    formula.SCORES,
    SCORES_LOOP,
    DOUBLE_KEYS,
)
