"""Five exercises added after the course's readers had timed it, answered the way a learner
would: one right answer each, and at least five plausible wrong ones that must print
"wrong", with the named mistake where the exercise names one.

- ``sqrt_product_of_averages`` (08): Var(q_i k_i) for q in {-2, 2}, k in {-1, 0, 1};
- ``alibi_slopes_by_hand`` (15): the ALiBi slopes of heads 0 and 2 of 4;
- ``mla_by_hand`` and ``mla_absorbed_scores`` (27): a latent row and its key by hand, and
  the scores of one query against the cache with W_UK absorbed;
- ``untrained_key_row`` (21): which row of W_K training on the copy task leaves in place.

Right answers are computed here another way than the checkers compute them (every pair of
values counted, each slope from its exponent, the keys rebuilt before scoring), never read
from the checkers; the wrong answers are what a learner gets by one slip.
"""

import numpy as np
import pytest

from attnlib import example as ex
from attnlib.selfcheck import check

# ---- sqrt_product_of_averages --------------------------------------------------------------
Q_VALUES, K_VALUES = (-2, 2), (-1, 0, 1)  # the exercise's equally likely values
PAIRS = [(q, k) for q in Q_VALUES for k in K_VALUES]  # independent: every pair equally likely
AVG_Q2 = np.mean([q * q for q in Q_VALUES])
AVG_K2 = np.mean([k * k for k in K_VALUES])

# ---- alibi_slopes_by_hand: heads counted from 0, slope 2^(-8 (h + 1) / H) ------------------
H, HEADS = 4, (0, 2)


def slope(h, heads=H):
    return 2.0 ** (-8 * (h + 1) / heads)


# ---- mla_by_hand: the matrices of the exercise text, seeds' row of the worked example ------
W_DKV = np.array([[1, 0], [0, 1], [1, 1], [0, 2]], dtype=float)  # (d_model, d_c) = (4, 2)
W_UK = np.array([[1, 1], [0, 1]], dtype=float)  # (d_c, d_k) = (2, 2)
X_SEEDS = ex.X[ex.TOKENS.index("seeds")]  # (1, 1, 0, 1)
C_SEEDS = np.array([sum(X_SEEDS[a] * W_DKV[a, j] for a in range(4)) for j in range(2)])
K_SEEDS = np.array([sum(C_SEEDS[a] * W_UK[a, j] for a in range(2)) for j in range(2)])


# ---- mla_absorbed_scores: the right way without absorbing, and slips of the absorbed way ---
def _rebuilt(q, C, W_UK):
    K = C @ W_UK  # (n, d_k): every key rebuilt
    return K @ q / np.sqrt(len(q))


def _absorbed(q, C, W_UK, divide_by):
    return C @ (q @ W_UK.T) / divide_by(q, C)


def _softmaxed(q, C, W_UK):
    s = _rebuilt(q, C, W_UK)
    e = np.exp(s - s.max())
    return e / e.sum()


# ---- untrained_key_row: the copy task's X, built as the lesson builds it --------------------
def _copy_task_columns():
    rng = np.random.default_rng(17)
    X = np.zeros((16, 4, 3))  # (B, n, d_model): value, marker, constant 1
    X[..., 0] = rng.integers(-2, 3, size=(16, 4))
    X[np.arange(16), rng.integers(0, 4, size=16), 1] = 1.0
    X[..., 2] = 1.0
    # a row of W_K shifts every key's score alike only if its column of X is the same for every
    # token of a sequence: then softmax ignores it and its gradient is 0
    (same,) = np.flatnonzero((X == X[:, :1, :]).all(axis=(0, 1)))
    return f"row {same}"


RIGHT = {
    "sqrt_product_of_averages": np.mean([(q * k) ** 2 for q, k in PAIRS]),  # mean of qk is 0
    "alibi_slopes_by_hand": tuple(slope(h) for h in HEADS),
    "mla_by_hand": (C_SEEDS, K_SEEDS),
    "mla_absorbed_scores": _rebuilt,
    "untrained_key_row": _copy_task_columns(),
}

# (exercise id, what the learner did, the answer, the mistake it must be named, or None)
WRONG = [
    ("sqrt_product_of_averages", "kept q's average of squares only", AVG_Q2, "product_one_side"),
    ("sqrt_product_of_averages", "kept k's average of squares only", AVG_K2, "product_one_side"),
    (
        "sqrt_product_of_averages",
        "multiplied the averages of q and k",
        np.mean(Q_VALUES) * np.mean(K_VALUES),
        "product_of_means",
    ),
    (
        "sqrt_product_of_averages",
        "added the squares instead of averaging them",
        sum(q * q for q in Q_VALUES) * sum(k * k for k in K_VALUES),
        None,
    ),
    (
        "sqrt_product_of_averages",
        "gave the spread, not the variance",
        np.sqrt(AVG_Q2 * AVG_K2),
        None,
    ),
    (
        "sqrt_product_of_averages",
        "squared the product of the average sizes",
        (np.mean(np.abs(Q_VALUES)) * np.mean(np.abs(K_VALUES))) ** 2,
        None,
    ),
    ("sqrt_product_of_averages", "added the two averages", AVG_Q2 + AVG_K2, None),
    (
        "alibi_slopes_by_hand",
        "counted the heads from 1",
        (slope(HEADS[0] - 1), slope(HEADS[1] - 1)),
        "alibi_heads_from_0",
    ),
    (
        "alibi_slopes_by_hand",
        "head 0 right, head 2 counted from 1",
        (slope(HEADS[0]), slope(HEADS[1] - 1)),
        "alibi_heads_from_0",
    ),
    (
        "alibi_slopes_by_hand",
        "copied the lesson's 8-head slopes",
        tuple(slope(h, heads=8) for h in HEADS),
        None,
    ),
    ("alibi_slopes_by_hand", "lost the exponent's sign", tuple(1 / slope(h) for h in HEADS), None),
    ("alibi_slopes_by_hand", "swapped the two", tuple(slope(h) for h in HEADS[::-1]), None),
    (
        "alibi_slopes_by_hand",
        "left out the 8",
        tuple(2.0 ** (-(h + 1) / H) for h in HEADS),
        None,
    ),
    (
        "mla_by_hand",
        "rebuilt the key with W_UK turned over",
        (C_SEEDS, C_SEEDS @ W_UK.T),
        "mla_uk_transposed",
    ),
    ("mla_by_hand", "gave the cached row as the key", (C_SEEDS, C_SEEDS), None),
    ("mla_by_hand", "gave c and k in the wrong order", (K_SEEDS, C_SEEDS), None),
    ("mla_by_hand", "used eat's row", (ex.X[1] @ W_DKV, ex.X[1] @ W_DKV @ W_UK), None),
    (
        "mla_by_hand",
        "dropped x's last product",
        (X_SEEDS[:3] @ W_DKV[:3], X_SEEDS[:3] @ W_DKV[:3] @ W_UK),
        None,
    ),
    (
        "mla_absorbed_scores",
        "did not divide",
        lambda q, C, W_UK: _absorbed(q, C, W_UK, lambda q, C: 1.0),
        "unscaled",
    ),
    (
        "mla_absorbed_scores",
        "divided by the root of the absorbed query's width, d_c",
        lambda q, C, W_UK: _absorbed(q, C, W_UK, lambda q, C: np.sqrt(C.shape[-1])),
        "mla_scaled_by_d_c",
    ),
    (
        "mla_absorbed_scores",
        "divided by d_k, not its root",
        lambda q, C, W_UK: _absorbed(q, C, W_UK, lambda q, C: len(q)),
        None,
    ),
    (
        "mla_absorbed_scores",
        "divided by the root of the number of cached rows",
        lambda q, C, W_UK: _absorbed(q, C, W_UK, lambda q, C: np.sqrt(len(C))),
        None,
    ),
    ("mla_absorbed_scores", "returned the weights, after a softmax", _softmaxed, None),
    ("mla_absorbed_scores", "lost the sign", lambda q, C, W_UK: -_rebuilt(q, C, W_UK), None),
    (
        "mla_absorbed_scores",
        "returned a column (n, 1)",
        lambda q, C, W_UK: _rebuilt(q, C, W_UK)[:, None],
        None,
    ),
    ("untrained_key_row", "the value's row", "row 0", "key_row_reads_value"),
    ("untrained_key_row", "the marker's row", "row 1", "key_row_reads_marker"),
    ("untrained_key_row", "every row moves", "none", "score_shift_has_gradient"),
    ("untrained_key_row", "a number, not an option", "2", None),
    ("untrained_key_row", "a row W_K does not have", "row 3", None),
]


@pytest.mark.parametrize("exercise_id", sorted(RIGHT))
def test_a_right_answer_passes(exercise_id):
    feedback = check(exercise_id, RIGHT[exercise_id], quiet=True)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize("exercise_id", sorted(RIGHT))
def test_each_exercise_has_five_wrong_answers_here(exercise_id):
    assert sum(row[0] == exercise_id for row in WRONG) >= 5


@pytest.mark.parametrize(
    ("exercise_id", "how", "answer", "mistake"), WRONG, ids=[f"{w[0]}: {w[1]}" for w in WRONG]
)
def test_a_wrong_answer_prints_wrong_and_names_its_mistake(exercise_id, how, answer, mistake):
    feedback = check(exercise_id, answer, quiet=True)
    assert (feedback.passed, feedback.status) == (False, "wrong"), (how, feedback.message)
    assert "wrong" in feedback.message
    assert feedback.mistake == mistake, (how, feedback.message)
