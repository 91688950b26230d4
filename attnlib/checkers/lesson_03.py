"""Checkers for lesson 03, scoring: one score by hand, a proof that rank(Q K^T) <= d_k
(``rank_witness``: a dependency between the columns of the worked example's S, then
``rank_witness_general``: the same dependency for any d_k + 1 keys), a repaired score
loop, and a prediction about doubled keys."""

import numpy as np

from .. import example as ex
from ..core import qk_scores
from ..selfcheck.exercise import Exercise

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
    solution=lambda: f"score_eat_seeds = 2 * 2 + 1 * 1  # (2, 1) . (2, 1) = {S[EAT, SEEDS]:.0f}",
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
# The check judges results only: any correct function passes, however its dot product is
# written (an inner loop, Q[i] @ K[j], np.dot, or even Q @ K.T). It does not try to tell a
# loop from one matrix product (an earlier 0/1 bool case did, and failed the honest loop
# S[i, j] = Q[i] @ K[j], since @ on two bool rows gives True or False, not a count).
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
    solution="prediction = 'doubled'  # a score is a sum of products with one key entry each",
    expected="doubled",
    options=["unchanged", "doubled", "quadrupled", "halved"],
    mistakes={"quadrupled": "scores_not_linear", "unchanged": "scores_not_linear"},
    written=(
        "Why does every score change that way when every key is "
        "doubled? Answer from the sum that makes one score."
    ),
)


# ---- rank_witness: S = Q K^T with n_k = 3 keys of width d_k = 2 has dependent columns --------
def key_dependency(K):
    """The z with ``K^T z = 0`` and last entry 1, for ``d_k + 1`` keys of width ``d_k``.

    Parameters
    ----------
    K : ndarray of shape (d_k + 1, d_k)
        Its first ``d_k`` rows must be independent.

    Returns
    -------
    ndarray of shape (d_k + 1,)
        Then ``S z = Q (K^T z) = 0`` for every Q: the columns of S are dependent.

    Examples
    --------
    >>> key_dependency(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    array([-1., -1.,  1.])
    """
    d_k = K.shape[-1]
    c = np.linalg.solve(K[:d_k].T, -K[d_k])  # z_1 k_1 + ... + z_d k_d = -k_{d+1}
    return np.append(c, 1.0)


RANK_WITNESS = Exercise(
    id="rank_witness",
    lesson="03_scoring",
    kind="value",
    answer="z",
    hints=[
        "S z = Q (K^T z): any z with K^T z = 0 gives S z = 0, whatever Q is.",
        "K^T z = z_1 k_birds + z_2 k_eat + z_3 k_seeds: with z_3 = 1 that is two equations "
        "(one per entry of a key) in z_1 and z_2.",
        "Birds' key has 0 as its second entry, so the equation of the second entries holds "
        "z_2 alone: solve it first, then put z_2 into the equation of the first entries.",
    ],
    solution=lambda: (
        "z = [-1 / 2, -1 / 2, 1]  # K^T z = -1/2 (3, 0) - 1/2 (1, 2) + (2, 1) = (0, 0)\n"
        f"# {key_dependency(K).tolist()}"
    ),
    expected=key_dependency(K),
    mistakes=[
        ("trivial_witness", np.zeros(K.shape[0])),
        ("witness_keys_as_columns", np.append(np.linalg.solve(K[:2], -K[2]), 1.0)),  # K z = 0
    ],
    decimals=2,
    name="z",
)


# ---- rank_witness_general: the same z for any d_k + 1 keys, on unequal sizes ------------------
_rng_r = np.random.default_rng(31)
KEY_DEPENDENCY_CASES = [
    (_rng_r.normal(size=(5, 4)),),  # d_k = 4, n_k = 5
    (_rng_r.normal(size=(3, 2)),),  # d_k = 2, n_k = 3
    (_rng_r.normal(size=(7, 6)),),  # d_k = 6, n_k = 7
    (K,),  # the worked example
]


def _solve_without_transpose(K):
    d_k = K.shape[-1]
    return np.append(np.linalg.solve(K[:d_k], -K[d_k]), 1.0)  # K z = 0 instead of K^T z = 0


RANK_WITNESS_GENERAL = Exercise(
    id="rank_witness_general",
    lesson="03_scoring",
    kind="function",
    answer="key_dependency",
    hints=[
        "Write z = (c, 1) with c of length d_k: K^T z = 0 says c_1 k_1 + ... + c_d k_d = -k_{d+1}.",
        "That is a square system whose matrix has the first d_k keys as its columns.",
        "np.linalg.solve(A, b) returns the c with A c = b. Here A's columns are the first "
        "d_k keys (those rows of K, transposed) and b is minus the last key; then put the "
        "1 back at the end of c.",
    ],
    solution="def key_dependency(K):\n"
    "    d_k = K.shape[-1]\n"
    "    c = np.linalg.solve(K[:d_k].T, -K[d_k])  # c_1 k_1 + ... + c_d k_d = -k_{d+1}\n"
    "    return np.append(c, 1.0)  # (d_k + 1,)",
    cases=KEY_DEPENDENCY_CASES,
    reference=key_dependency,
    mistakes=[
        ("trivial_witness", lambda K: np.zeros(K.shape[0])),
        ("witness_keys_as_columns", _solve_without_transpose),
    ],
    arg_names=("K",),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SCORE_EAT_SEEDS,
    RANK_WITNESS,
    RANK_WITNESS_GENERAL,
    SCORES_LOOP,
    DOUBLE_KEYS,
)
