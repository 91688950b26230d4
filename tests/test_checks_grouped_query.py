"""The checkers of lesson 26 (grouped-query attention), with answers written the way a learner
writes them: numpy loops, never taken from attnlib. Each right answer passes; each slip is
named with its own code; an unfilled cell is "not attempted"."""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed, verdict


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def decode_step(q, K_cache, V_cache, which=lambda h, g, n_kv: h // g, scaled=True):
    g = len(q) // len(K_cache)
    rows = []
    for h in range(len(q)):
        j = which(h, g, len(K_cache))
        scores = K_cache[j] @ q[h] / (np.sqrt(q.shape[-1]) if scaled else 1.0)
        rows.append(softmax(scores) @ V_cache[j])
    return np.array(rows)


def repeat_kv_loop(K, n_heads):
    g = n_heads // len(K)
    return np.array([K[h // g] for h in range(n_heads)])


def cycled(K, n_heads):
    return np.array([K[h % len(K)] for h in range(n_heads)])


PER_SEQUENCE = 2 * 80 * 4096 * 8 * 128 * 2 / 2**30
LAYERS, HEADS, D_HEAD, D_C, D_ROPE = 40, 32, 128, 256, 32  # exercise 6's model


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("gqa_by_hand", [0, 0, 0, 0, 1, 1, 1, 1]),
        ("gqa_by_hand", np.array([0, 0, 0, 0, 1, 1, 1, 1])),
        ("gqa_decode_step", decode_step),
        ("gqa_predict_weights", "different"),
        ("gqa_fix_repeat", repeat_kv_loop),
        ("gqa_batch", (35, 4)),
        ("gqa_batch", (int(44 // PER_SEQUENCE), int(44 // (8 * PER_SEQUENCE)))),
        ("mla_cache", ((D_C + D_ROPE) * LAYERS, 2 * HEADS * D_HEAD * LAYERS)),
        ("mla_cache", (11520.0, 327680.0)),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("gqa_by_hand", [0, 1, 0, 1, 0, 1, 0, 1], "gqa_cycled"),
        (
            "gqa_decode_step",
            lambda q, K, V: decode_step(q, K, V, lambda h, g, n: h % n),
            "gqa_cycled",
        ),
        ("gqa_decode_step", lambda q, K, V: decode_step(q, K, V, scaled=False), "unscaled"),
        ("gqa_predict_weights", "the same", "gqa_predict_same"),
        ("gqa_fix_repeat", cycled, "gqa_cycled"),
        ("gqa_batch", (70, 4), "kv_cache_no_two"),
        ("gqa_batch", (35, 8), "kv_cache_no_two"),
        ("gqa_batch", (44 / PER_SEQUENCE, 4), "partial_sequence"),  # / where // belongs
        ("gqa_batch", (35, 44 / (8 * PER_SEQUENCE)), "partial_sequence"),
        ("mla_cache", (D_C * LAYERS, 2 * HEADS * D_HEAD * LAYERS), "mla_no_rope"),
        (
            "mla_cache",
            ((2 * D_C + D_ROPE) * LAYERS, 2 * HEADS * D_HEAD * LAYERS),
            "mla_latent_twice",
        ),
        ("mla_cache", ((D_C + D_ROPE) * LAYERS, HEADS * D_HEAD * LAYERS), "kv_cache_no_two"),
        ("mla_cache", (D_C + D_ROPE, 2 * HEADS * D_HEAD * LAYERS), "cache_one_layer"),
        ("mla_cache", ((D_C + D_ROPE) * LAYERS, 2 * HEADS * D_HEAD), "cache_one_layer"),
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("gqa_by_hand", ...),
        ("gqa_decode_step", lambda q, K_cache, V_cache: ...),
        ("gqa_predict_weights", ...),
        ("gqa_fix_repeat", lambda K, n_heads: ...),
        ("gqa_batch", (..., ...)),
        ("mla_cache", (..., ...)),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_an_unnamed_slip_is_wrong_without_a_code():
    feedback = verdict("gqa_fix_repeat", lambda K, n_heads: repeat_kv_loop(K, n_heads)[::-1])
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    feedback = verdict("gqa_batch", (33, 4))  # neither right nor a named mistake
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message


@pytest.mark.parametrize(
    "answer",
    [
        (D_C + D_ROPE, 2 * HEADS * D_HEAD),  # one layer only
        ((D_C + D_ROPE) * LAYERS, (D_C + D_ROPE) * LAYERS),  # both caches the same
        (2 * HEADS * D_HEAD * LAYERS, (D_C + D_ROPE) * LAYERS),  # the two swapped
    ],
)
def test_other_wrong_cache_counts_are_wrong(answer):
    assert verdict("mla_cache", answer).status == "wrong"
