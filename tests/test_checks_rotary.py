"""The checkers of lesson 14 (rotary positions), with answers written the way a learner
writes them: numpy only, never taken from attnlib, so a checker cannot pass by comparing
the package with itself. Each right answer passes; each slip a learner makes is named with
its own code; an unfilled cell is "not attempted"."""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed


def turn_pairs(X, positions, a_cols, b_cols, theta, sign=1):
    angles = sign * np.asarray(positions, dtype=float)[:, None] * theta  # (n, d / 2)
    a, b = X[:, a_cols], X[:, b_cols]
    Y = np.array(X, dtype=float)
    Y[:, a_cols] = a * np.cos(angles) - b * np.sin(angles)
    Y[:, b_cols] = a * np.sin(angles) + b * np.cos(angles)
    return Y


def thetas(d, exponent=2):
    return 10000.0 ** (-exponent * np.arange(d // 2) / d)


def rotate(X, positions):
    d = X.shape[-1]
    return turn_pairs(X, positions, slice(0, None, 2), slice(1, None, 2), thetas(d))


def rotate_loop(X, positions):  # the same answer written with loops
    n, d = X.shape
    Y = np.zeros((n, d))
    for j in range(n):
        for i in range(d // 2):
            angle = positions[j] * 10000 ** (-2 * i / d)
            c, s = np.cos(angle), np.sin(angle)
            Y[j, 2 * i] = X[j, 2 * i] * c - X[j, 2 * i + 1] * s
            Y[j, 2 * i + 1] = X[j, 2 * i] * s + X[j, 2 * i + 1] * c
    return Y


def rotate_clockwise(X, positions):
    d = X.shape[-1]
    return turn_pairs(X, positions, slice(0, None, 2), slice(1, None, 2), thetas(d), sign=-1)


def rotate_exponent_i(X, positions):
    d = X.shape[-1]
    return turn_pairs(X, positions, slice(0, None, 2), slice(1, None, 2), thetas(d, 1))


def rotate_halves(X, positions):
    d = X.shape[-1]
    return turn_pairs(X, positions, slice(0, d // 2), slice(d // 2, None), thetas(d))


def rotate_halves_repeat(X, positions):  # the bug of exercise 4
    d = X.shape[-1]
    angles = np.asarray(positions, dtype=float)[:, None] * thetas(d)
    cos, sin = np.repeat(np.cos(angles), 2, axis=-1), np.repeat(np.sin(angles), 2, axis=-1)
    return X * cos + np.concatenate([-X[:, d // 2 :], X[:, : d // 2]], axis=-1) * sin


def alibi(n_q, n_k, slope, sign=-1, offset=True, hide=True):
    B = np.full((n_q, n_k), -np.inf)
    for i in range(n_q):
        place = i + (n_k - n_q if offset else 0)
        for j in range(n_k):
            if j <= place or not hide:
                B[i, j] = sign * slope * (place - j)
    return B


c2, s2 = np.cos(2.0), np.sin(2.0)
Q_TURNED = (1 * c2 - 4 * s2, 1 * s2 + 4 * c2)  # birds' query (1, 4) turned by 2 radians
Q_BACK = (1 * c2 + 4 * s2, -1 * s2 + 4 * c2)  # turned by -2


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("rope_by_hand", (Q_TURNED, 2 * Q_TURNED[0] + Q_TURNED[1])),
        ("rope_by_hand", ((-4.05, -0.76), -8.86)),  # worked by hand, two decimals
        ("rope_rotate", rotate),
        ("rope_rotate", rotate_loop),
        ("rope_predict_swap", "different"),
        ("rope_fix_halves", rotate_halves),
        ("alibi_bias", alibi),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("rope_by_hand", (Q_BACK, 2 * Q_BACK[0] + Q_BACK[1]), "rope_clockwise"),
        ("rope_by_hand", ((1, 4), 6), "rope_not_rotated"),
        ("rope_by_hand", (Q_TURNED, 6), "rope_not_rotated"),  # turned, then scored unturned
        ("rope_rotate", rotate_clockwise, "rope_clockwise"),
        ("rope_rotate", rotate_exponent_i, "rope_exponent"),
        ("rope_rotate", rotate_halves, "rope_pairs_halves"),
        ("rope_predict_swap", "same", "rope_offset_unsigned"),
        ("rope_fix_halves", rotate_halves_repeat, "rope_mixed_layout"),
        ("rope_fix_halves", rotate, "rope_pairs_neighbours"),
        ("alibi_bias", lambda n_q, n_k, m: alibi(n_q, n_k, m, sign=1), "alibi_sign"),
        ("alibi_bias", lambda n_q, n_k, m: alibi(n_q, n_k, m, offset=False), "alibi_top_left"),
        ("alibi_bias", lambda n_q, n_k, m: alibi(n_q, n_k, m, hide=False), "alibi_future_unmasked"),
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("rope_by_hand", (..., ...)),
        ("rope_rotate", lambda X, positions: ...),
        ("rope_predict_swap", ...),
        ("alibi_bias", lambda n_q, n_k, slope: ...),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_an_unnamed_slip_is_wrong_without_a_code():
    from tests.checker_cases import verdict

    feedback = verdict("rope_rotate", lambda X, positions: rotate(X, positions) * 2)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
