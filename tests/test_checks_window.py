"""The checkers of lesson 28 (sliding-window attention), with answers written the way a
learner writes them: numpy loops and sympy sums, never taken from attnlib, so a checker cannot
pass by comparing the package with itself. Each right answer passes; each slip (off-by-one
window, wrong alignment, ring overwrite order, ...) is named with its own code; an unfilled
cell is "not attempted"."""

import numpy as np
import pytest
import sympy as sp

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed, verdict


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def ring_decode(steps, w, d_k, d_v, slot_of=lambda t, w: t % w, size=None, write_first=True,
                scaled=True):  # fmt: skip
    """A ring decoder as a loop over the stream of (q, k, v); the switches make the slips."""
    size = w if size is None else size
    K_slots, V_slots, used, rows = np.zeros((size, d_k)), np.zeros((size, d_v)), [], []

    def write(t, k, v):
        slot = slot_of(t, w)
        K_slots[slot], V_slots[slot] = k, v
        if slot not in used:
            used.append(slot)

    for t, (q, k, v) in enumerate(steps):
        if write_first:
            write(t, k, v)
        if used:
            scores = K_slots[used] @ q / (np.sqrt(d_k) if scaled else 1.0)
            rows.append(softmax(scores) @ V_slots[used])
        else:  # over an empty ring the slip blends nothing
            rows.append(np.zeros(d_v))
        if not write_first:
            write(t, k, v)
    return np.array(rows)


def ring_decode_with_attnlib(steps, w, d_k, d_v):  # another right answer: attnlib's ring
    import attnlib

    ring = attnlib.RingKVCache(w, d_k, d_v)
    rows = []
    for q, k, v in steps:
        ring.append(k, v)
        rows.append(softmax(ring.keys @ q / np.sqrt(d_k)) @ ring.values)
    return np.array(rows)


def ring_decode_with_a_deque(steps, w, d_k, d_v):  # deque(maxlen=w) keeps at most w keys
    from collections import deque

    keys, values, rows = deque(maxlen=w), deque(maxlen=w), []
    for q, k, v in steps:
        keys.append(k)
        values.append(v)
        rows.append(softmax(np.array(keys) @ q / np.sqrt(d_k)) @ np.array(values))
    return np.array(rows)


def decode_every_key(steps, w, d_k, d_v):  # a cache that keeps every key: no window
    keys, values, rows = [], [], []
    for q, k, v in steps:
        keys.append(k)
        values.append(v)
        rows.append(softmax(np.array(keys) @ q / np.sqrt(d_k)) @ np.array(values))
    return np.array(rows)


def window_mask(n_q, n_k, w, offset=True, extra=0, causal=True):
    mask = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        p = i + (n_k - n_q if offset else 0)
        for j in range(n_k):
            if causal:
                mask[i, j] = p - w - extra < j <= p
            else:
                mask[i, j] = abs(p - j) < w
    return mask


n, w, i = sp.symbols("n w i", integer=True, positive=True)
BEFORE = sp.summation(i, (i, 0, w - 1)) + sp.summation(w - 1, (i, w, n - 1))
COUNT = sp.expand(n + 2 * BEFORE)

# by hand: birds' scores 3 and 9 (seeds' 6 is outside the window), divided by sqrt(2)
E3, E9 = np.exp(3 / np.sqrt(2)), np.exp(9 / np.sqrt(2))
MASK_ALONE = [[1, 1, 0], [1, 1, 1], [0, 1, 1]]
BIRDS = (E3 / (E3 + E9), E9 / (E3 + E9), 0.0)
U3, U9 = np.exp(3.0), np.exp(9.0)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("window_by_hand", (MASK_ALONE, BIRDS)),
        ("window_by_hand", (np.array(MASK_ALONE, dtype=bool), (0.01, 0.99, 0))),  # by hand
        ("window_ring_decode", ring_decode),
        ("window_ring_decode", ring_decode_with_attnlib),
        ("window_ring_decode", ring_decode_with_a_deque),
        ("window_ring_slots", [8, 9, 6, 7]),
        ("window_fix_alignment", window_mask),
        ("window_count_alone", COUNT),
        ("window_count_alone", n * (2 * w - 1) - w * (w - 1)),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("window_by_hand", ([[1, 1, 1]] * 3, BIRDS), "window_off_by_one"),
        ("window_by_hand", ([[1, 0, 0], [1, 1, 0], [0, 1, 1]], BIRDS), "window_made_causal"),
        ("window_by_hand", (MASK_ALONE, (0.013, 0.882, 0.106)), "window_off_by_one"),
        ("window_by_hand", (MASK_ALONE, (1.0, 0.0, 0.0)), "window_made_causal"),
        ("window_by_hand", (MASK_ALONE, (U3 / (U3 + U9), U9 / (U3 + U9), 0)), "unscaled"),
        (
            "window_ring_decode",
            lambda s, w, d_k, d_v: ring_decode(s, w, d_k, d_v, slot_of=lambda t, w: min(t, w - 1)),
            "ring_overwrites_newest",
        ),
        (
            "window_ring_decode",
            lambda s, w, d_k, d_v: ring_decode(
                s, w, d_k, d_v, lambda t, w: t % (w + 1), size=w + 1
            ),
            "window_off_by_one",
        ),
        ("window_ring_decode", decode_every_key, "window_forgotten"),
        (
            "window_ring_decode",
            lambda s, w, d_k, d_v: ring_decode(s, w, d_k, d_v, write_first=False),
            "kv_cache_append_after",
        ),
        (
            "window_ring_decode",
            lambda s, w, d_k, d_v: ring_decode(s, w, d_k, d_v, scaled=False),
            "unscaled",
        ),
        ("window_ring_slots", [0, 1, 2, 9], "ring_overwrites_newest"),
        ("window_ring_slots", [6, 7, 8, 9], "ring_listed_by_age"),
        ("window_ring_slots", [7, 8, 9, 6], "ring_slot_shifted"),
        (
            "window_fix_alignment",
            lambda n_q, n_k, w: window_mask(n_q, n_k, w, offset=False),
            "window_top_left",
        ),
        (
            "window_fix_alignment",
            lambda n_q, n_k, w: window_mask(n_q, n_k, w, extra=1),
            "window_off_by_one",
        ),
        (
            "window_fix_alignment",
            lambda n_q, n_k, w: window_mask(n_q, n_k, w, causal=False),
            "window_not_causal",
        ),
        ("window_count_alone", n * (2 * w - 1), "window_count_no_edges"),
        ("window_count_alone", n * (2 * w + 1) - w * (w + 1), "window_off_by_one"),
        ("window_count_alone", n * w - w * (w - 1) / 2, "window_count_causal"),
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("window_by_hand", (..., ...)),
        ("window_ring_decode", lambda steps, w, d_k, d_v: ...),
        ("window_ring_slots", ...),
        ("window_fix_alignment", lambda n_q, n_k, w: ...),
        ("window_count_alone", ...),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_an_unnamed_slip_is_wrong_without_a_code():
    feedback = verdict("window_ring_decode", lambda *args: ring_decode(*args) * 2)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    feedback = verdict("window_ring_slots", [9, 8, 7, 6])
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    feedback = verdict("window_count_alone", n * w)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    feedback = verdict("window_fix_alignment", lambda n_q, n_k, w: window_mask(n_q, n_k, w + 2))
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
