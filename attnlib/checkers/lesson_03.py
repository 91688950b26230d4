"""Checkers for lesson 03, scoring: one score by hand, a repaired score loop, and a
prediction about doubled keys (the required ``scores`` lives in formula.py)."""

import numpy as np

from .. import example as ex
from ..core import project, qk_scores
from ..selfcheck import add_mistake, check_array, check_choice, check_function, exercise

add_mistake(
    "loop_index",
    "in the double loop, i picks the query and j picks the key: the sum needs Q[i, m] * K[j, m].",
)
add_mistake(
    "scores_not_linear",
    "a score is a sum of products q_m k_m: doubling every k_m doubles the sum.",
)

Q, K = project(ex.X, ex.W_Q), project(ex.X, ex.W_K)
S = qk_scores(Q, K)
EAT, SEEDS = ex.TOKENS.index("eat"), ex.TOKENS.index("seeds")


@exercise(
    "score_eat_seeds",
    hints=[
        "The row is the query's token, the column is the key's token.",
        "eat's query is (2, 1) and seeds' key is (2, 1): multiply entry by entry and add.",
    ],
    solution=lambda: f"Q[1] @ K[2] = 2×2 + 1×1 = {S[EAT, SEEDS]:.0f}",
)
def _score_eat_seeds(answer):
    return check_array(
        answer, S[EAT, SEEDS], mistakes={"transposed": S[SEEDS, EAT]}, name="the score"
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


@exercise(
    "scores_loop",
    hints=[
        "Print the loop's result next to Q @ K.T: what is true of every row of the wrong one?",
        "Each row of the broken result repeats one number: the key never changes with j.",
    ],
    solution=(
        "def scores_loop(Q, K):\n"
        "    S = np.zeros((Q.shape[0], K.shape[0]))  # (n_q, n_k)\n"
        "    for i in range(Q.shape[0]):  # each query\n"
        "        for j in range(K.shape[0]):  # each key\n"
        "            for m in range(Q.shape[1]):  # the dot product over d_k\n"
        "                S[i, j] += Q[i, m] * K[j, m]\n"
        "    return S"
    ),
)
def _scores_loop(answer):
    return check_function(
        answer,
        SCORES_CASES,
        reference=qk_scores,
        mistakes=[
            ("loop_index", _scores_loop_bug),
            ("transposed", lambda Q, K: K @ Q.T),
        ],
        arg_names=("Q", "K"),
    )


@exercise(
    "double_keys",
    hints=[
        "Write one score as a sum: q_1 k_1 + q_2 k_2.",
        "Replace every k by 2k and factor the 2 out.",
    ],
    solution="'doubled': every score is a sum of products with one key entry each",
)
def _double_keys(answer):
    return check_choice(
        answer,
        "doubled",
        options=["unchanged", "doubled", "quadrupled", "halved"],
        mistakes={"quadrupled": "scores_not_linear", "unchanged": "scores_not_linear"},
    )
