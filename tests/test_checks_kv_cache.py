"""The checkers of lesson 25 (decoding with a key-value cache), with answers written the way
a learner writes them: numpy loops, never taken from attnlib, so a checker cannot pass by
comparing the package with itself. Each right answer passes; each slip is named with its own
code; an unfilled cell is "not attempted"."""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed, verdict


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def decode(Q, K, V, append_first=True, scaled=True, every_key=False):
    """A cached decoder as a loop; the switches make the learner's slips."""
    d_k = Q.shape[-1]
    K_cache, V_cache = np.empty((0, d_k)), np.empty((0, V.shape[-1]))
    rows = []
    for t in range(len(Q)):
        if append_first:
            K_cache, V_cache = np.vstack([K_cache, K[t]]), np.vstack([V_cache, V[t]])
        keys, values = (K, V) if every_key else (K_cache, V_cache)
        scores = keys @ Q[t] / (np.sqrt(d_k) if scaled else 1.0)
        # over an empty cache the slip gives an empty row of weights and a zero output
        rows.append(softmax(scores) @ values if len(keys) else np.zeros(V.shape[-1]))
        if not append_first:
            K_cache, V_cache = np.vstack([K_cache, K[t]]), np.vstack([V_cache, V[t]])
    return np.array(rows)


def decode_with_kv_cache_class(Q, K, V):  # the other right answer: attnlib's cache, own softmax
    import attnlib

    cache = attnlib.KVCache(len(Q), K.shape[-1], V.shape[-1])
    rows = []
    for t in range(len(Q)):
        cache.append(K[t], V[t])
        rows.append(softmax(cache.keys @ Q[t] / np.sqrt(Q.shape[-1])) @ cache.values)
    return np.array(rows)


def attend_new(Q_new, K_cache, V_cache, offset=True, masked=True):
    n_q, n_k = len(Q_new), len(K_cache)
    out = []
    for i in range(n_q):
        place = i + (n_k - n_q if offset else 0)
        seen = n_k if not masked else place + 1
        scores = K_cache[:seen] @ Q_new[i] / np.sqrt(Q_new.shape[-1])
        out.append(softmax(scores) @ V_cache[:seen])
    return np.array(out)


E8, E7 = np.exp(8 / np.sqrt(2)), np.exp(7 / np.sqrt(2))
W_EAT = E8 / (E8 + E7)
OUT_1 = (W_EAT * 4 + (1 - W_EAT) * 2, W_EAT * 2 + (1 - W_EAT) * 4)
U_EAT = np.exp(8) / (np.exp(8) + np.exp(7))  # unscaled


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("kv_by_hand", ((4, 2), (W_EAT, 1 - W_EAT), OUT_1)),
        ("kv_by_hand", ((4.0, 2.0), (0.67, 0.33), (3.34, 2.66))),  # worked by hand
        ("kv_decode", decode),
        ("kv_decode", decode_with_kv_cache_class),
        ("kv_predict_doubling", "twice"),
        ("kv_fix_chunk", attend_new),
        ("kv_cache_gib", 2 * 32 * 8192 * 8 * 128 * 2 / 2**30),
        ("kv_cache_gib", 1.0),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("kv_by_hand", ((4, 2), (U_EAT, 1 - U_EAT), OUT_1), "unscaled"),
        (
            "kv_by_hand",
            (
                (4, 2),
                (W_EAT, 1 - W_EAT),
                (U_EAT * 4 + (1 - U_EAT) * 2, U_EAT * 2 + (1 - U_EAT) * 4),
            ),
            "unscaled",
        ),
        ("kv_decode", lambda Q, K, V: decode(Q, K, V, append_first=False), "kv_cache_append_after"),
        ("kv_decode", lambda Q, K, V: decode(Q, K, V, every_key=True), "kv_cache_future_keys"),
        ("kv_decode", lambda Q, K, V: decode(Q, K, V, scaled=False), "unscaled"),
        ("kv_predict_doubling", "four times", "kv_predict_quadratic"),
        ("kv_predict_doubling", "the same", "kv_predict_constant"),
        ("kv_fix_chunk", lambda Q, K, V: attend_new(Q, K, V, offset=False), "top_left_with_cache"),
        ("kv_fix_chunk", lambda Q, K, V: attend_new(Q, K, V, masked=False), "kv_cache_future_keys"),
        ("kv_cache_gib", 32 * 8192 * 8 * 128 * 2 / 2**30, "kv_cache_no_two"),
        ("kv_cache_gib", 2 * 32 * 8192 * 32 * 128 * 2 / 2**30, "kv_cache_query_heads"),
        ("kv_cache_gib", 2 * 32 * 8192 * 8 * 128 * 4 / 2**30, "kv_cache_float32"),
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("kv_by_hand", (..., ..., ...)),
        ("kv_decode", lambda Q, K, V: ...),
        ("kv_predict_doubling", ...),
        ("kv_fix_chunk", lambda Q_new, K_cache, V_cache: ...),
        ("kv_cache_gib", ...),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_an_unnamed_slip_is_wrong_without_a_code():
    feedback = verdict("kv_decode", lambda Q, K, V: decode(Q, K, V) * 2)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    feedback = verdict("kv_cache_gib", 1.07)  # 10^9 bytes, not 2^30
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
