"""Each exercise's contract is judged: every answer that used to earn a ✓ without doing what
the exercise says is wrong now, written here as a learner would write it.

The rules (attnlib/selfcheck/contract.py): a peak-memory bound measured with tracemalloc in
the child that calls the function, the blocks of keys a tiled function reads (queries and
keys handed over as arrays that log their products), the type of array returned, the domain
the text promises (drawn, seeded), and exactness (a defining property, every value that
rounds where the lesson prints, a measured range, a relative tolerance). The last test runs
the constraint rules through ``attnlib check`` on notebooks.
"""

import json

import numpy as np
import pytest
import sympy as sp

from attnlib import attention, attention_backward, causal_mask, gpt
from attnlib.checkers import lesson_09, lesson_30
from attnlib.cli import main
from attnlib.selfcheck import contract, registry
from attnlib.selfcheck.run import call_cases, expression_function, split_case, with_instructions
from tests.checker_cases import ROOT, assert_mistake, assert_passed, verdict
from tests.grader.conftest import load, src, write


def assert_wrong(exercise_id, answer, *phrases):
    """Wrong, no mistake named unless the phrases ask, and each phrase in the message."""
    feedback = verdict(exercise_id, answer)
    assert (feedback.passed, feedback.status) == (False, "wrong"), feedback.message
    for phrase in phrases:
        assert phrase in feedback.message, feedback.message
    return feedback


def _softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


# ---- blocked_causal: block_size honoured, hidden blocks never read, no n x n table ----------
def blocked_per_row(Q, K, V, block_size):
    """A per-row softmax over keys 0..i: right numbers, block_size ignored."""
    d_k = Q.shape[1]
    return np.array(
        [_softmax(K[: i + 1] @ Q[i] / np.sqrt(d_k)) @ V[: i + 1] for i in range(len(Q))]
    )


def _tiles(Q, K, V, block_size, S_full=None, hidden_scores=False):
    n, d_k = Q.shape
    out = np.zeros((n, V.shape[1]))
    for qs in range(0, n, block_size):
        Q_b = Q[qs : qs + block_size]
        rows = np.arange(qs, qs + len(Q_b))[:, None]
        m, l_sum, a_sum = np.full((len(Q_b), 1), -np.inf), 0.0, 0.0
        for ks in range(0, n if hidden_scores else qs + len(Q_b), block_size):
            if S_full is not None:
                S_b = S_full[qs : qs + block_size, ks : ks + block_size]
            else:
                S_b = Q_b @ K[ks : ks + block_size].T / np.sqrt(d_k)
            if ks > rows.max():  # a hidden block: its scores computed, its values skipped
                continue
            cols = np.arange(ks, ks + S_b.shape[1])[None, :]
            S_b = np.where(cols <= rows, S_b, -np.inf)
            m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
            P_b = np.exp(S_b - m_new)
            l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)
            a_sum = a_sum * np.exp(m - m_new) + P_b @ V[ks : ks + block_size]
            m = m_new
        out[qs : qs + len(Q_b)] = a_sum / l_sum
    return out


def blocked_after_full_scores(Q, K, V, block_size):
    """A loop over tiles that first builds the n x n scores."""
    S = Q @ K.T / np.sqrt(Q.shape[1])  # (n, n)
    return _tiles(Q, K, V, block_size, S_full=S)


def blocked_where(Q, K, V, block_size):
    """Full masked attention blended with np.where (so a hidden nan value is dropped)."""
    n = len(Q)
    visible = np.arange(n)[None, :] <= np.arange(n)[:, None]  # (n, n)
    S = np.where(visible, Q @ K.T / np.sqrt(Q.shape[1]), -np.inf)
    parts = _softmax(S)[:, :, None] * V[None, :, :]  # (n, n, d_v): weight times value
    return np.where(visible[:, :, None], parts, 0.0).sum(axis=1)


def blocked_hidden_scores(Q, K, V, block_size):
    """Tiles that compute every hidden block's scores and skip only their values."""
    return _tiles(Q, K, V, block_size, hidden_scores=True)


def blocked_right(Q, K, V, block_size):
    return _tiles(Q, K, V, block_size)


def blocked_per_score(Q, K, V, block_size):
    """One score at a time, query i against key j: right numbers, no tiles at all."""
    d_k = Q.shape[1]
    rows = []
    for i in range(len(Q)):
        s = np.array([float(Q[i] @ K[j]) for j in range(i + 1)]) / np.sqrt(d_k)  # (i + 1,)
        rows.append(_softmax(s) @ V[: i + 1])
    return np.array(rows)


def blocked_by_ones(Q, K, V, block_size):
    """Tiles of one query by one key, whatever block_size says."""
    return _tiles(Q, K, V, 1)


def _one_tile_then(copy):
    def escapes(Q, K, V, block_size):
        _ = Q[:block_size] @ K[:block_size].T  # one honest tile for the log
        return blocked_per_row(copy(Q), copy(K), V, block_size)  # the rest from copies

    return escapes


blocked_tolist = _one_tile_then(lambda M: np.array(M.tolist()))
blocked_view = _one_tile_then(lambda M: M.view(np.ndarray))
blocked_array = _one_tile_then(np.array)  # np.array cannot be seen: the missing tiles are


def test_blocked_causal_right_tiles_pass():
    assert_passed("blocked_causal", blocked_right)


def test_blocked_causal_tiles_from_asarray_are_not_judged_never_wrong():
    def asarray_first(Q, K, V, block_size):
        return blocked_right(np.asarray(Q), np.asarray(K), V, block_size)

    feedback = verdict("blocked_causal", asarray_first)
    assert (feedback.passed, feedback.status) == (False, "error"), feedback.message
    assert "not judged" in feedback.message, feedback.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (blocked_per_score, "part of a tile"),
        (blocked_by_ones, "part of a tile"),
        (blocked_tolist, "cannot follow"),
        (blocked_view, "cannot follow"),
        (blocked_array, "never computes the tile of queries 3..5 against keys 0..2"),
    ],
    ids=["per_score", "tiles_of_one", "tolist", "view", "np_array"],
)
def test_blocked_causal_needs_every_visible_tile_whole_from_q_and_k(answer, phrase):
    assert_wrong("blocked_causal", answer, phrase)


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (blocked_per_row, "part of a tile"),
        (blocked_after_full_scores, "a hidden block"),
        (blocked_where, "a hidden block"),
        (blocked_hidden_scores, "a hidden block"),
    ],
    ids=["per_row", "full_scores_first", "where", "hidden_scores"],
)
def test_blocked_causal_holes_are_wrong(answer, phrase):
    assert_wrong("blocked_causal", answer, phrase)


def test_blocked_causal_peak_memory_alone_refuses_the_n_by_n_table():
    # the block rule is blind to np.asarray copies; the memory case still sees the table
    exercise = registry.get("blocked_causal")
    (memory,) = [c for c in exercise.constraints if isinstance(c, contract.PeakMemory)]

    def full_then_asarray(Q, K, V, block_size):
        return blocked_where(np.asarray(Q) + 0.0, np.asarray(K) + 0.0, V, block_size)

    records = call_cases(full_then_asarray, memory.instructed())
    (args,) = memory.cases
    detail = memory.check({"peak": True}, args, records[0], "on inputs n = 1024")
    assert detail is not None and "never build the n x n matrix" in detail
    assert records[0]["peak"] > 8 * 1024 * 1024  # the 1024 x 1024 scores were measured
    assert_wrong("blocked_causal", full_then_asarray, "never build the n x n matrix")


def test_a_tracked_input_logs_products_through_views_copies_and_dot():
    def uses_views(Q, K):
        tile = K[2:4].copy().T  # a slice, a copy, a transpose
        np.dot(Q[0:2], tile)  # rows 0..1 meet keys 2..3
        return np.einsum("d,kd->k", Q[5], K[[0, 5]])  # fancy indexing: keys 0 and 5

    rng = np.random.default_rng(0)
    (record,) = call_cases(
        uses_views,
        [with_instructions((rng.normal(size=(6, 2)), rng.normal(size=(6, 2))), track=[0, 1])],
    )
    assert record["products"] == [[[0, 1], [2, 3]], [[5], [0, 5]]]


# ---- kv_decode, window_ring_decode, flash_backward: no n x n table ---------------------------
def decode_full_causal(Q, K, V):
    return attention(Q, K, V, mask=causal_mask(len(Q)))[0]


def ring_windowed_attention(steps, w, d_k, d_v):
    """Every step kept, then windowed attention with a band mask: an (n, n) table."""
    Q, K, V = (np.array(rows) for rows in zip(*steps, strict=True))
    n = len(Q)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return attention(Q, K, V, mask=(j <= i) & (j > i - w))[0]


def backward_by_attnlib(Q, K, V, output, L, dOutput, block_size):
    return attention_backward(Q, K, V, dOutput)


def backward_full_D(Q, K, V, output, L, dOutput, block_size):
    """Tiles, but D from the full P * dP (which builds both (n_q, n_k) tables)."""
    d_k = Q.shape[1]
    P = np.exp(Q @ K.T / np.sqrt(d_k) - L[:, None])
    D = (P * (dOutput @ V.T)).sum(axis=1, keepdims=True)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for start in range(0, len(K), block_size):
        keys = slice(start, start + block_size)
        P_b = np.exp(Q @ K[keys].T / np.sqrt(d_k) - L[:, None])
        dV[keys] = P_b.T @ dOutput
        dS_b = P_b * (dOutput @ V[keys].T - D)
        dQ += dS_b @ K[keys] / np.sqrt(d_k)
        dK[keys] = dS_b.T @ Q / np.sqrt(d_k)
    return dQ, dK, dV


@pytest.mark.parametrize(
    ("exercise_id", "answer", "phrase"),
    [
        ("kv_decode", decode_full_causal, "do not build an n x n table"),
        ("window_ring_decode", ring_windowed_attention, "keep no more than w keys"),
        ("flash_backward", backward_by_attnlib, "never build the (n_q, n_k) weights"),
        ("flash_backward", backward_full_D, "never build the (n_q, n_k) weights"),
    ],
    ids=["kv_full_causal", "ring_window_mask", "flash_attention_backward", "flash_full_D"],
)
def test_an_n_by_n_table_breaks_the_memory_bound(exercise_id, answer, phrase):
    feedback = assert_wrong(exercise_id, answer, phrase, "peak memory")
    assert "MiB" in feedback.message


def test_the_memory_case_is_too_small_for_the_table_and_large_for_the_answer():
    for exercise_id in ("blocked_causal", "kv_decode", "flash_backward"):
        exercise = registry.get(exercise_id)
        (memory,) = [c for c in exercise.constraints if isinstance(c, contract.PeakMemory)]
        for args in memory.cases:
            n_q, n_k = len(args[0]), len(args[2])
            assert memory.bound(*args) < 8 * n_q * n_k, exercise_id  # a float64 table: no
    exercise = registry.get("window_ring_decode")
    (memory,) = [c for c in exercise.constraints if isinstance(c, contract.PeakMemory)]
    for case in memory.cases:  # every key kept: no
        Q, K, V, w, d_k, d_v = split_case(case)[1]
        assert K.shape == (len(Q), d_k) and memory.bound(Q, K, V, w, d_k, d_v) < K.nbytes


# ---- window_ring_decode: its tokens arrive one step at a time ----------------------------------
def ring_by_slices(steps, w, d_k, d_v):
    """The quoted hole, as a stream allows it: no way back into K but through steps[...]."""
    return np.array(
        [_softmax(steps[t - w + 1 : t + 1][1] @ q) for t, (q, _, _) in enumerate(steps)]
    )


def ring_full_cache(steps, w, d_k, d_v):
    """Grow a cache of every key, attend over the last w."""
    K_cache, V_cache, rows = np.zeros((0, d_k)), np.zeros((0, d_v)), []
    for q, k, v in steps:
        K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])  # (t + 1, d)
        rows.append(_softmax(K_cache[-w:] @ q / np.sqrt(d_k)) @ V_cache[-w:])
    return np.array(rows)


def ring_deque_of_every_key(steps, w, d_k, d_v):
    """A deque that keeps every key it was handed (no maxlen), attending over the last w."""
    from collections import deque

    keys, values, rows = deque(), deque(), []
    for q, k, v in steps:
        keys.append(k)
        values.append(v)
        K_w, V_w = np.array(list(keys)[-w:]), np.array(list(values)[-w:])  # (w, d_k), (w, d_v)
        rows.append(_softmax(K_w @ q / np.sqrt(d_k)) @ V_w)
    return np.array(rows)


@pytest.mark.parametrize("answer", [ring_full_cache, ring_deque_of_every_key])
def test_a_decoder_that_keeps_every_key_breaks_the_ring_bound(answer):
    assert_wrong("window_ring_decode", answer, "keep no more than w keys", "peak memory")


def test_a_decoder_cannot_slice_the_keys_of_earlier_steps():
    feedback = verdict("window_ring_decode", ring_by_slices)
    assert (feedback.passed, feedback.status) == (False, "error"), feedback.message
    assert "not subscriptable" in feedback.message, feedback.message


def ring_from_the_streams_frame(steps, w, d_k, d_v):
    Q, K, V = steps.gi_frame.f_locals["arrays"]  # every key, no ring
    rows = []
    for t in range(len(Q)):
        s = K[max(0, t - w + 1) : t + 1] @ Q[t] / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V[max(0, t - w + 1) : t + 1])
    return np.array(rows)


def ring_from_the_streams_referents(steps, w, d_k, d_v):
    import gc

    found = [x for x in gc.get_referents(steps) if isinstance(x, (list, tuple))]
    arrays = [a for x in found for a in x if isinstance(a, np.ndarray) and a.ndim == 2]
    K, V = arrays[1], arrays[2]  # whatever the stream holds, seen through its own copy
    rows = []
    for t, (q, _, _) in enumerate(steps):
        s = K[max(0, t - w + 1) : t + 1] @ q / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V[max(0, t - w + 1) : t + 1])
    return np.array(rows)


def test_the_stream_leads_back_to_no_earlier_step():
    feedback = verdict("window_ring_decode", ring_from_the_streams_frame)
    assert not feedback.passed and "gi_frame" in feedback.message, feedback.message
    assert_wrong("window_ring_decode", ring_from_the_streams_referents, "inf or nan")


def test_the_stream_hands_each_step_a_fresh_copy_once():
    def look(steps, w, d_k, d_v):
        first = [
            [*map(float, q), *map(float, k), *map(float, v), k.base is None] for q, k, v in steps
        ]
        return first, len(list(steps))  # the rows, each a copy (no base); a second pass: none

    Q, K, V = (np.arange(6.0).reshape(3, 2) + shift for shift in (0, 10, 20))
    (record,) = call_cases(look, [with_instructions((Q, K, V, 2, 2, 2), stream=3)])
    rows, again = record["ok"]
    assert rows == [[*Q[t], *K[t], *V[t], True] for t in range(3)] and again == 0


# ---- domain: unsorted vocabularies, non-integer tables; result types --------------------------
def one_hot_unique(tokens, vocab):
    columns = list(np.unique(vocab))  # sorted
    X = np.zeros((len(tokens), len(vocab)))
    for i, token in enumerate(tokens):
        X[i, columns.index(token)] = 1.0
    return X


def test_one_hot_over_a_sorted_vocabulary_is_named():
    assert_mistake("one_hot", one_hot_unique, "one_hot_sorted_vocab")


def test_one_hot_domain_draws_unsorted_vocabularies():
    exercise = registry.get("one_hot")
    drawn = exercise.domain.cases()
    assert drawn == exercise.domain.cases()  # seeded: the grader draws the same
    assert all(vocab != sorted(vocab) for _, vocab in drawn)
    assert any(len(tokens) < len(vocab) for tokens, vocab in drawn)


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (
            lambda lengths, n_k: (np.arange(n_k)[None, :] < np.asarray(lengths)[:, None])[
                :, None
            ].astype(int),
            "int64",
        ),
        (
            lambda lengths, n_k: (
                (np.arange(n_k)[None, :] < np.asarray(lengths)[:, None])[:, None] * 1.0
            ),
            "float64",
        ),
    ],
    ids=["int", "float"],
)
def test_mask_padding_must_be_boolean(answer, phrase):
    assert_wrong("mask_padding", answer, phrase, "a boolean array")


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (
            lambda tokens, table: np.array([table[t] for t in tokens]).astype(int),
            "differs",
        ),
        (lambda tokens, table: [list(table[t]) for t in tokens], "returned a list"),
        (
            lambda tokens, table: np.array([np.array(table[t]) for t in tokens], dtype=object),
            "an array of object",  # the wire sends its numbers as float64: judged before
        ),
    ],
    ids=["int_array", "list_of_lists", "object_array"],
)
def test_embed_must_be_a_float_array(answer, phrase):
    assert_wrong("embed", answer, phrase)


def _one_hot_as(convert):
    def one_hot(tokens, vocab):
        X = np.zeros((len(tokens), len(vocab)))
        for i, token in enumerate(tokens):
            X[i, vocab.index(token)] = 1.0
        return convert(X)

    return one_hot


@pytest.mark.parametrize(
    ("convert", "phrase"),
    [(np.ndarray.tolist, "returned a list"), (lambda X: X.astype(object), "array of object")],
    ids=["list_of_lists", "object_array"],
)
def test_one_hot_must_be_an_array_of_numbers(convert, phrase):
    assert_wrong("one_hot", _one_hot_as(convert), phrase, "shape (n, len(vocab))")


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_one_hot_takes_any_numeric_array(dtype):
    assert_passed("one_hot", _one_hot_as(lambda X: X.astype(dtype)))


def test_embed_domain_holds_tables_an_int_array_would_round():
    tables = [table for _, table in registry.get("embed").domain.cases()]
    assert any((v != np.round(v)).any() for table in tables for v in table.values())


# ---- exactness ---------------------------------------------------------------------------------
def test_rank_witness_is_judged_by_its_property():
    assert_wrong("rank_witness", [-0.51, -0.49, 1], "K^T z = 0")
    assert_passed("rank_witness", [-1 / 2, -1 / 2, 1])
    assert_passed("rank_witness", np.array([-0.5, -0.5, 1.0]))


@pytest.mark.parametrize("answer", [9 / np.sqrt(2), 6.36, 6.364, 9 / 1.414, 9 / 1.41, 6.38])
def test_scaling_birds_eat_takes_every_honest_rounding(answer):
    assert_passed("scaling_birds_eat", answer)


@pytest.mark.parametrize("answer", [6.37, 6.35, 6.39])
def test_scaling_birds_eat_refuses_what_no_route_rounds_to(answer):
    assert_wrong("scaling_birds_eat", answer)


def test_first_loss_range_is_what_200_seeds_measure():
    losses = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        fresh = gpt.init_gpt(12, d_model=32, n_heads=2, n_layers=2, d_ff=64, rng=rng, std=0.02)
        tokens, targets, scored = gpt.induction_batch(rng, 64, 12, 6)
        losses.append(gpt.cross_entropy(gpt.gpt_forward(fresh, tokens)[0], targets, scored))
    low, high = lesson_30.FIRST_LOSS_RANGE
    assert low <= min(losses) < low + 0.001 and high - 0.001 < max(losses) <= high
    assert round(float(np.mean(losses)), 2) == round(np.log(12) + (11 / 12) * 32 * 0.02**2 / 2, 2)


@pytest.mark.parametrize("answer", [np.log(12), 2.485, 2.491, 2.476, 2.510])
def test_first_loss_takes_every_value_seeds_measure(answer):
    assert_passed("gpt_predict_first_loss", answer)


@pytest.mark.parametrize("answer", [2.470, 2.52, 2.6])
def test_first_loss_refuses_values_no_seed_gives(answer):
    assert_wrong("gpt_predict_first_loss", answer)


def test_gqa_batch_true_division_is_named():
    with_8, with_64 = registry.get("gqa_batch").expected
    per_sequence = 2 * 80 * 4096 * 8 * 128 * 2 / 2**30
    free = with_8 * per_sequence + per_sequence / 2  # between two whole numbers of sequences
    assert free / per_sequence != with_8
    assert_mistake("gqa_batch", (44 / per_sequence, with_64), "partial_sequence")


@pytest.mark.parametrize("answer", [(35.000001, 4), (35, 4 + 1e-7)])
def test_gqa_batch_is_judged_exactly(answer):
    with_8, with_64 = registry.get("gqa_batch").expected
    assert abs(answer[0] - with_8) < 1e-5 and abs(answer[1] - with_64) < 1e-5  # near, not equal
    assert_wrong("gqa_batch", answer, "a whole number of sequences each (exactly)")
    assert_passed("gqa_batch", (float(with_8), float(with_64)))


# ---- memory hidden from tracemalloc: mmap, np.memmap -----------------------------------------
def _mapped(shape):
    """A float64 table in an anonymous mmap: memory tracemalloc does not trace."""
    import mmap

    return np.frombuffer(mmap.mmap(-1, 8 * shape[0] * shape[1]), dtype=np.float64).reshape(shape)


def decode_in_mmap(Q, K, V):
    n, d_k = Q.shape
    S = _mapped((n, n))  # the n x n scores
    np.matmul(Q, K.T, out=S)
    S /= np.sqrt(d_k)
    for i in range(n):
        S[i, i + 1 :] = -np.inf
    return _softmax_in_place(S) @ V


def _softmax_in_place(S):
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    return S


def decode_in_memmap(Q, K, V):
    import tempfile

    with tempfile.TemporaryFile() as file:
        S = np.memmap(file, dtype=np.float64, mode="w+", shape=(len(Q), len(K)))
        np.matmul(Q, K.T, out=S)
        S /= np.sqrt(Q.shape[1])
        for i in range(len(Q)):
            S[i, i + 1 :] = -np.inf
        return np.asarray(_softmax_in_place(S) @ V)


def backward_in_mmap(Q, K, V, output, L, dOutput, block_size):
    d_k = Q.shape[1]
    P, dS = _mapped((len(Q), len(K))), _mapped((len(Q), len(K)))
    np.matmul(Q, K.T, out=P)
    P /= np.sqrt(d_k)
    P -= L[:, None]
    np.exp(P, out=P)  # the (n_q, n_k) weights
    np.matmul(dOutput, V.T, out=dS)
    dS -= (dOutput * output).sum(axis=1, keepdims=True)
    dS *= P
    return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), P.T @ dOutput


@pytest.mark.parametrize(
    ("exercise_id", "answer", "phrase"),
    [
        ("kv_decode", decode_in_mmap, "do not build an n x n table"),
        ("flash_backward", backward_in_mmap, "never build the (n_q, n_k) weights"),
    ],
    ids=["kv_mmap", "flash_mmap"],
)
def test_a_table_hidden_in_mmap_breaks_the_resident_bound(exercise_id, answer, phrase):
    assert_wrong(exercise_id, answer, "resident memory grew", "mmap", phrase)


# ---- a memory case is sealed: no file grows, no new process starts ----------------------------
def decode_in_temporary_file(Q, K, V):
    import tempfile

    n, d = Q.shape
    file = tempfile.TemporaryFile()
    for i in range(n):
        file.write((K @ Q[i] / np.sqrt(d)).tobytes())  # the n x n scores, in a file
    out = []
    for t in range(n):
        file.seek(t * n * 8)
        s = np.frombuffer(file.read(n * 8))[: t + 1]
        e = np.exp(s - s.max())
        out.append(e / e.sum() @ V[: t + 1])
    return np.array(out)


def ring_keys_in_dev_shm(steps, w, d_k, d_v):
    import os

    fd = os.open(f"/dev/shm/attnlib-test-{os.getpid()}", os.O_RDWR | os.O_CREAT, 0o600)
    os.unlink(f"/dev/shm/attnlib-test-{os.getpid()}")
    rows = []
    for t, (q, k, v) in enumerate(steps):
        os.pwrite(fd, np.concatenate([k, v]).tobytes(), t * 8 * (d_k + d_v))  # every key
        live = np.frombuffer(
            os.pread(fd, 8 * (d_k + d_v) * min(t + 1, w), 8 * (d_k + d_v) * max(0, t + 1 - w))
        ).reshape(-1, d_k + d_v)
        s = live[:, :d_k] @ q / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ live[:, d_k:])
    return np.array(rows)


def backward_weights_in_memfd(Q, K, V, output, L, dOutput, block_size):
    import mmap
    import os

    fd = os.memfd_create("weights")
    os.ftruncate(fd, 8 * len(Q) * len(K))  # the (n_q, n_k) weights, in a memory file
    P = np.frombuffer(mmap.mmap(fd, 8 * len(Q) * len(K)), dtype=np.float64)
    P = P.reshape(len(Q), len(K))
    P[:] = np.exp(Q @ K.T / np.sqrt(Q.shape[1]) - L[:, None])
    dS = P * (dOutput @ V.T - (dOutput * output).sum(axis=1, keepdims=True))
    d_k = Q.shape[1]
    return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), P.T @ dOutput


@pytest.mark.parametrize(
    ("exercise_id", "answer", "phrase"),
    [
        ("kv_decode", decode_in_temporary_file, "do not build an n x n table"),
        ("kv_decode", decode_in_memmap, "do not build an n x n table"),
        ("window_ring_decode", ring_keys_in_dev_shm, "keep no more than w keys"),
        ("flash_backward", backward_weights_in_memfd, "never build the (n_q, n_k) weights"),
    ],
    ids=["kv_tempfile", "kv_memmap", "ring_dev_shm", "flash_memfd"],
)
def test_a_table_kept_in_a_file_is_refused(exercise_id, answer, phrase):
    # the page cache is neither traced nor resident: the file is refused while measuring
    assert_wrong(exercise_id, answer, "wrote to a file", phrase)


def _in_a_forked_child(fork):
    """kv_decode whose n x n table is built in a forked child and sent back (the review's)."""

    def decode(Q, K, V):
        import os

        r, w = os.pipe()
        pid = fork()
        if pid == 0:
            os.write(w, decode_full_causal(Q, K, V).tobytes())  # the n x n table lives here
            os._exit(0)
        if pid < 0:
            raise OSError("fork failed")
        os.close(w)
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.waitpid(pid, 0)
        return np.frombuffer(data).reshape(len(Q), V.shape[1])

    return decode


def _os_fork():
    import os

    return os.fork()


def _libc_fork():
    import ctypes

    return ctypes.CDLL(None, use_errno=True).fork()  # around os.fork: the C library's own


def decode_in_a_subprocess(Q, K, V):
    import subprocess
    import sys

    program = (
        "import sys, numpy as np, attnlib\n"
        "n, d, e = (int(x) for x in sys.argv[1:])\n"
        "data = np.frombuffer(sys.stdin.buffer.read())\n"
        "Q, K, V = np.split(data, [n * d, 2 * n * d])\n"
        "Q, K, V = Q.reshape(n, d), K.reshape(n, d), V.reshape(n, e)\n"
        "out = attnlib.attention(Q, K, V, mask=attnlib.causal_mask(n))[0]\n"
        "sys.stdout.buffer.write(out.tobytes())\n"
    )
    n, d, e = len(Q), Q.shape[1], V.shape[1]
    done = subprocess.run(
        [sys.executable, "-c", program, str(n), str(d), str(e)],
        input=np.concatenate([Q.ravel(), K.ravel(), V.ravel()]).tobytes(),
        capture_output=True,
        check=True,
    )
    return np.frombuffer(done.stdout).reshape(n, e)


# subprocess starts its child through _posixsubprocess.fork_exec on 3.10, subprocess._fork_exec
# on 3.11 and 3.12 and os.posix_spawn on 3.13: the message names whichever was called
@pytest.mark.parametrize(
    ("answer", "names"),
    [
        (_in_a_forked_child(_os_fork), ["(os.fork)"]),
        (
            decode_in_a_subprocess,
            ["subprocess.fork_exec)", "(subprocess._fork_exec)", "(os.posix_spawn)"],
        ),
    ],
    ids=["os_fork", "subprocess"],
)
def test_work_in_a_new_process_is_refused(answer, names):
    message = assert_wrong("kv_decode", answer, "started a new process (").message
    assert any(name in message for name in names), message


def test_a_fork_around_os_fork_is_never_a_pass():
    # ctypes calls the C library's fork itself: the system call is refused (Linux x86-64)
    feedback = verdict("kv_decode", _in_a_forked_child(_libc_fork))
    assert (feedback.status, feedback.mistake) == ("error", None), feedback.message
    assert "fork failed" in feedback.message, feedback.message


def test_an_honest_decoder_may_start_a_thread_in_the_memory_case():
    def start_a_thread():
        import threading

        done = []
        thread = threading.Thread(target=done.append, args=(1,))
        thread.start()
        thread.join()
        assert done == [1]

    def decode(Q, K, V):
        start_a_thread()
        rows = [
            _softmax(K[: t + 1] @ Q[t] / np.sqrt(Q.shape[1])) @ V[: t + 1] for t in range(len(Q))
        ]
        return np.array(rows)

    assert_passed("kv_decode", decode)


# ---- proofs: many points, nan never a pass ---------------------------------------------------
P = sp.symbols("p_0 p_1 p_2", positive=True)
V_ = sp.symbols("v_0 v_1 v_2", real=True)


def test_psd_quadratic_plus_a_square_of_the_constraint_is_wrong():
    p, v = sp.Matrix(P), sp.Matrix(V_)
    J = sp.diag(*p) - p * p.T
    answer = (v.T * J * v)[0] + 2 * (sum(P) - 1) ** 2
    assert answer.subs(dict(zip(P + V_, (1.5, 0, 0, 1, 0, 0), strict=True))) == -0.25
    assert_mistake("sqrt_jacobian_psd", answer, "psd_not_sum_of_squares")


def _variance_form():
    m = sum(p * v for p, v in zip(P, V_, strict=True))
    return sum(p * (v - m) ** 2 for p, v in zip(P, V_, strict=True)), m


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e + sp.Rational(1, 10**12),
        lambda e: e + sp.Float(1e-9),
        lambda e: e * (1 + sp.Float(1e-12)),
        lambda e: e + sp.Rational(1, 10**40),  # below any point test: sympy's exact answer
    ],
    ids=["plus_rational_1e-12", "plus_float_1e-9", "times_1_plus_1e-12", "plus_rational_1e-40"],
)
def test_psd_a_tiny_change_of_the_formula_is_wrong(change):
    # sympy's exact non-zero difference is final; floats are judged at 30 digits
    assert_wrong("sqrt_jacobian_psd", change(_variance_form()[0]), "not v^T J v")


def test_psd_right_forms_that_use_the_constraint_are_never_wrong():
    variance, m = _variance_form()
    s = sum(P)
    about_m_over_s = sum(p * (v - m / s) ** 2 for p, v in zip(P, V_, strict=True))
    assert_passed("sqrt_jacobian_psd", about_m_over_s)
    assert_passed("sqrt_jacobian_psd", variance * sp.Float(1.0))  # a float literal's rounding
    eliminated = verdict("sqrt_jacobian_psd", variance.subs(P[2], 1 - P[0] - P[1]))
    assert eliminated.status == "error" and "not judged" in eliminated.message, eliminated.message


def test_psd_nan_records_are_wrong_with_a_message():
    exercise = registry.get("sqrt_jacobian_psd")
    n = len(lesson_09._ON)
    right = call_cases(
        expression_function(lesson_09.VARIANCE_FORM, lesson_09.PSD_NAMES), exercise.cases
    )
    records = right[:n] + [{"ok": float("nan")}] * (len(right) - n)
    feedback = exercise.judge(records)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    assert "nan" in feedback.message
    assert exercise.judge(right).passed


# ---- float16 arithmetic on rows of thousands of keys -----------------------------------------
def softmax_half_running_sum(x):
    z = x.astype(np.float32)
    E = np.exp(z - z.max(axis=-1, keepdims=True)).astype(np.float16)
    total = np.zeros(E.shape[:-1] + (1,), dtype=np.float16)
    for j in range(E.shape[-1]):
        total += E[..., j : j + 1]  # a float16 running sum: stalls at 2048
    return (E / total).astype(np.float16)


def test_softmax_half_float16_running_sum_is_wrong():
    ones = np.zeros((1, 4096), dtype=np.float16)
    assert float(softmax_half_running_sum(ones).astype(np.float64).sum()) == 2.0
    assert_wrong("softmax_half", softmax_half_running_sum, "(2, 4096)")


def test_softmax_half_weights_twice_too_large_are_wrong_where_they_are_small():
    # judged from records: right everywhere but on the nearly uniform rows of 4096 keys,
    # where the stalled sum makes every weight 2^-11 instead of about 2^-12
    exercise = registry.get("softmax_half")
    records = []
    for case in exercise.cases:
        (x,) = split_case(case)[1]
        stalled = x.shape[-1] == 4096 and float(np.abs(x).max()) < 1
        records.append({"ok": softmax_half_running_sum(x) if stalled else _softmax_16(x)})
    assert any(x.shape == (2, 4096) for (x,) in (split_case(c)[1] for c in exercise.cases))
    feedback = exercise.judge(records)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    assert "relative" in feedback.message and "(2, 4096)" in feedback.message


def _softmax_16(x):
    return _softmax(x.astype(np.float32)).astype(np.float16)


def test_softmax_half_cases_include_many_keys_and_more_axes():
    shapes = [split_case(c)[1][0].shape for c in registry.get("softmax_half").cases]
    assert max(s[-1] for s in shapes) >= 4096 and max(len(s) for s in shapes) >= 4


# ---- a mistake is named only when it explains every case where the answer differs -----------
def _decode_times(factor_of):
    def decode(Q, K, V):
        d_k = Q.shape[1]
        factor = factor_of(Q)
        rows = [
            _softmax(K[: t + 1] @ (Q[t] * factor) / np.sqrt(d_k)) @ V[: t + 1]
            for t in range(len(Q))
        ]
        return np.array(rows)

    return decode


def test_a_mistake_that_explains_some_cases_only_is_not_named():
    # unscaled where n > 4; scores doubled where n <= 4: "unscaled" explains only some cases
    partly = _decode_times(lambda Q: np.sqrt(Q.shape[1]) if len(Q) > 4 else 2.0)
    feedback = verdict("kv_decode", partly)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    assert_mistake("kv_decode", _decode_times(lambda Q: np.sqrt(Q.shape[1])), "unscaled")


# ---- the same rules through `attnlib check` -----------------------------------------------------
def _notebook_with(stem, exercise_id, source):
    nb = load("exercises", stem)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and f'check("{exercise_id}"' in src(cell):
            cell["source"] = source
    return nb


BLOCKED_PER_ROW = """
def causal_blocked_attention(Q, K, V, block_size):
    d_k = Q.shape[1]
    rows = []
    for i in range(len(Q)):
        s = K[: i + 1] @ Q[i] / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V[: i + 1])
    return np.array(rows)


check("blocked_causal", causal_blocked_attention)
"""

DECODE_FULL = """
def decode(Q, K, V):
    return attnlib.attention(Q, K, V, mask=attnlib.causal_mask(len(Q)))[0]


check("kv_decode", decode)
"""

RING_FULL_CACHE = """
def ring_decode(steps, w, d_k, d_v):
    K_cache, V_cache, rows = np.zeros((0, d_k)), np.zeros((0, d_v)), []
    for q, k, v in steps:
        K_cache, V_cache = np.vstack([K_cache, k]), np.vstack([V_cache, v])
        s = K_cache[-w:] @ q / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V_cache[-w:])
    return np.array(rows)


check("window_ring_decode", ring_decode)
"""

BACKWARD_MMAP = """
import mmap


def flash_backward(Q, K, V, output, L, dOutput, block_size):
    d_k = Q.shape[1]
    P, dS = (np.frombuffer(mmap.mmap(-1, 8 * len(Q) * len(K))).reshape(len(Q), -1) for _ in "PS")
    np.matmul(Q, K.T, out=P)
    P /= np.sqrt(d_k)
    P -= L[:, None]
    np.exp(P, out=P)
    np.matmul(dOutput, V.T, out=dS)
    dS -= (dOutput * output).sum(axis=1, keepdims=True)
    dS *= P
    return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), P.T @ dOutput


check("flash_backward", flash_backward)
"""

GQA_NEARLY_WHOLE = """
with_8, with_64 = 35.000001, 4
check("gqa_batch", (with_8, with_64))
"""

BLOCKED_TOLIST = """
def causal_blocked_attention(Q, K, V, block_size):
    _ = Q[:block_size] @ K[:block_size].T
    Q, K = np.array(Q.tolist()), np.array(K.tolist())
    rows = []
    for i in range(len(Q)):
        s = K[: i + 1] @ Q[i] / np.sqrt(Q.shape[1])
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V[: i + 1])
    return np.array(rows)


check("blocked_causal", causal_blocked_attention)
"""

PADDING_INT = """
def padding_mask(lengths, n_k):
    return (np.arange(n_k)[None, :] < np.asarray(lengths)[:, None])[:, None, :].astype(int)


check("mask_padding", padding_mask)
"""


def test_attnlib_check_judges_the_constraints_as_self_check_does(tmp_path, capsys):
    paths = [
        write(
            tmp_path / "22_cost_and_memory.ipynb",
            _notebook_with("22_cost_and_memory", "blocked_causal", BLOCKED_PER_ROW),
        ),
        write(
            tmp_path / "25_decoding_with_a_kv_cache.ipynb",
            _notebook_with("25_decoding_with_a_kv_cache", "kv_decode", DECODE_FULL),
        ),
        write(
            tmp_path / "10_masking.ipynb", _notebook_with("10_masking", "mask_padding", PADDING_INT)
        ),
        write(
            tmp_path / "26_grouped_query_attention.ipynb",
            _notebook_with("26_grouped_query_attention", "gqa_batch", GQA_NEARLY_WHOLE),
        ),
        write(
            tmp_path / "29_flash_attention.ipynb",
            _notebook_with("29_flash_attention", "flash_backward", BACKWARD_MMAP),
        ),
        write(
            tmp_path / "28_sliding_window_attention.ipynb",
            _notebook_with("28_sliding_window_attention", "window_ring_decode", RING_FULL_CACHE),
        ),
    ]
    assert main(["check", "--json", "-q", *map(str, paths)]) == 1
    rows = {row["exercise"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    expected = {
        "blocked_causal": "part of a tile",
        "kv_decode": "do not build an n x n table",
        "mask_padding": "a boolean array",
        "window_ring_decode": "keep no more than w keys",
        "flash_backward": "resident memory grew",
        "gqa_batch": "a whole number of sequences each (exactly)",
    }
    for exercise_id, phrase in expected.items():
        assert rows[exercise_id]["status"] == "wrong", rows[exercise_id]
        assert phrase in rows[exercise_id]["message"], rows[exercise_id]


RING_FROM_FRAME = """
def ring_decode(steps, w, d_k, d_v):
    Q, K, V = steps.gi_frame.f_locals["arrays"]
    rows = []
    for t in range(len(Q)):
        s = K[max(0, t - w + 1) : t + 1] @ Q[t] / np.sqrt(d_k)
        e = np.exp(s - s.max())
        rows.append(e / e.sum() @ V[max(0, t - w + 1) : t + 1])
    return np.array(rows)


check("window_ring_decode", ring_decode)
"""

DECODE_TEMPORARY_FILE = """
import tempfile


def decode(Q, K, V):
    n, d = Q.shape
    f = tempfile.TemporaryFile()
    for i in range(n):
        f.write((K @ Q[i] / np.sqrt(d)).tobytes())
    out = []
    for t in range(n):
        f.seek(t * n * 8)
        s = np.frombuffer(f.read(n * 8))[: t + 1]
        e = np.exp(s - s.max())
        out.append(e / e.sum() @ V[: t + 1])
    return np.array(out)


check("kv_decode", decode)
"""

BACKWARD_FORKED = """
import os


def flash_backward(Q, K, V, output, L, dOutput, block_size):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        grads = attnlib.attention_backward(Q, K, V, dOutput)
        os.write(w, np.concatenate([g.ravel() for g in grads]).tobytes())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    flat = np.frombuffer(data)
    sizes = np.cumsum([Q.size, K.size])
    dQ, dK, dV = np.split(flat, sizes)
    return dQ.reshape(Q.shape), dK.reshape(K.shape), dV.reshape(V.shape)


check("flash_backward", flash_backward)
"""

PSD_PLUS_RATIONAL = """
p = sp.symbols("p_0:3", nonnegative=True)
v = sp.symbols("v_0:3", real=True)
m = sum(a * b for a, b in zip(p, v))
quad = sum(a * (b - m) ** 2 for a, b in zip(p, v)) + sp.Rational(1, 10**12)
check("sqrt_jacobian_psd", quad)
"""

EMBED_OBJECT = """
def embed(tokens, table):
    return np.array([np.array(table[t]) for t in tokens], dtype=object)


check("embed", embed)
"""


def test_attnlib_check_refuses_the_second_review_s_answers_as_self_check_does(tmp_path, capsys):
    answers = {
        "window_ring_decode": ("28_sliding_window_attention", RING_FROM_FRAME, "gi_frame"),
        "kv_decode": ("25_decoding_with_a_kv_cache", DECODE_TEMPORARY_FILE, "wrote to a file"),
        "flash_backward": ("29_flash_attention", BACKWARD_FORKED, "started a new process"),
        "sqrt_jacobian_psd": ("09_saturation", PSD_PLUS_RATIONAL, "not v^T J v"),
        "embed": ("01_words_to_vectors", EMBED_OBJECT, "an array of object"),
    }
    paths = [
        write(tmp_path / f"{stem}.ipynb", _notebook_with(stem, exercise_id, source))
        for exercise_id, (stem, source, _) in answers.items()
    ]
    assert main(["check", "--json", "-q", *map(str, paths)]) == 1
    rows = {row["exercise"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    for exercise_id, (_, _, phrase) in answers.items():
        assert rows[exercise_id]["status"] in ("wrong", "error"), rows[exercise_id]
        assert phrase in rows[exercise_id]["message"], rows[exercise_id]
    assert all(rows[e]["status"] == "wrong" for e in answers if e != "window_ring_decode")


def test_attnlib_check_refuses_a_tolist_escape_as_self_check_does(tmp_path, capsys):
    nb = _notebook_with("22_cost_and_memory", "blocked_causal", BLOCKED_TOLIST)
    path = write(tmp_path / "22_cost_and_memory.ipynb", nb)
    assert main(["check", "--json", "-q", str(path)]) == 1
    rows = {row["exercise"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["blocked_causal"]["status"] == "wrong", rows["blocked_causal"]
    assert "cannot follow" in rows["blocked_causal"]["message"], rows["blocked_causal"]


@pytest.mark.parametrize("pad", ["power above 8", "erf", "atan"])
def test_psd_padded_past_what_the_judge_reads_is_wrong(pad):
    # v^T J v, with its negative cross terms, padded so that sympy's judgment was skipped and
    # only the points decided (all three passed before)
    p, v = sp.Matrix(P), sp.Matrix(V_)
    q = sp.expand((v.T * (sp.diag(*p) - p * p.T) * v)[0])
    s = sum(P)
    big = 10**6 * (s - 1) ** 2 * (v.T * v)[0]
    answer = {
        "power above 8": (q + big) * (1 + (s - 1) ** 10),
        "erf": (q + big) * (1 + sp.erf((s - 1) ** 2)),
        "atan": q + big + sp.atan((s - 1) ** 2),
    }[pad]
    feedback = verdict("sqrt_jacobian_psd", answer)
    assert feedback.status == "wrong", feedback.message
    assert "could not read it as a formula" in feedback.message


def test_psd_a_form_that_is_nonnegative_numerically_but_not_by_its_form_is_wrong():
    # v^T J v + 3 (sum p - 1)^2 |v|^2 equals v^T J v on the simplex and is >= 0 at every
    # point of the check where p >= 0; only its form shows that nothing forces it to be
    p, v = sp.Matrix(P), sp.Matrix(V_)
    J = sp.diag(*p) - p * p.T
    answer = (v.T * J * v)[0] + 3 * (sum(P) - 1) ** 2 * (v.T * v)[0]
    assert_mistake("sqrt_jacobian_psd", answer, "psd_not_sum_of_squares")
    m = (p.T * v)[0]
    assert_passed(
        "sqrt_jacobian_psd", sum(p_i * (v_i - m) ** 2 for p_i, v_i in zip(p, v, strict=True))
    )
    pairs = sum(p[i] * p[j] * (v[i] - v[j]) ** 2 for i in range(3) for j in range(3)) / 2
    assert_passed("sqrt_jacobian_psd", pairs)


def test_the_formula_is_rebuilt_from_known_classes_only():
    symbols = {"x": sp.Symbol("x")}
    assert contract.rebuild(["Add", ["Symbol", "x"], ["Integer", "2"]], symbols) == symbols["x"] + 2
    for tree in (["eval", ["Symbol", "x"]], ["Symbol", "y"], "x + 2", ["Integer", 2]):
        with pytest.raises(ValueError):
            contract.rebuild(tree, symbols)


def test_a_proof_record_with_nan_is_wrong_with_a_message():
    exercise = registry.get("sqrt_jacobian_row_sums")
    right = call_cases(expression_function(exercise.expected, exercise.arg_names), exercise.cases)
    assert exercise.judge(right).passed
    broken = [{"ok": np.full_like(r["ok"], np.nan)} for r in right]
    feedback = exercise.judge(broken)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    assert "not a finite number" in feedback.message


@pytest.mark.parametrize("pad", [sp.nan, sp.zoo, sp.oo], ids=["nan", "zoo", "oo"])
def test_a_proof_padded_with_nan_or_infinity_is_wrong_with_a_message(pad):
    p, v = sp.symbols("p_0:3", positive=True), sp.symbols("v_0:3", real=True)
    m = sum(p_i * v_i for p_i, v_i in zip(p, v, strict=True))
    variance = sum(p_i * (v_i - m) ** 2 for p_i, v_i in zip(p, v, strict=True))
    feedback = verdict("sqrt_jacobian_psd", variance + pad * (sum(p) - 1))
    assert feedback.status == "wrong", feedback.message
    assert "not a finite number" in feedback.message


def softmax_along_axis_1(x):
    """Right for one row and for a table, where the rows are axis 1; wrong on more axes."""
    x2 = np.atleast_2d(x)
    e = np.exp(x2 - x2.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


def test_softmax_any_number_of_axes_means_3d_and_4d_cases():
    shapes = [split_case(c)[1][0].shape for c in registry.get("softmax").cases]
    assert {3, 4} <= {len(s) for s in shapes}
    assert_wrong("softmax", softmax_along_axis_1, "differs")


def test_saturation_exercises_count_the_weights_as_lesson_09_does():
    import re

    def indices(text):
        return {int(i) for i in re.findall(r"\b[pv]_\{?(\d)", text)}

    lesson = (ROOT / "notebooks" / "09_saturation.ipynb").read_text(encoding="utf-8")
    exercises = (ROOT / "solutions" / "09_saturation.ipynb").read_text(encoding="utf-8")
    words = [exercises] + [
        " ".join([*e.hints, e.solution_text(), getattr(e.exactness, "text", "")])
        for e in lesson_09.EXERCISES
    ]
    assert min(indices(lesson)) == 0
    for text in words:
        assert indices(text) <= {0, 1, 2}, text[:200]
    for e in lesson_09.EXERCISES:
        assert not e.arg_names or e.arg_names[0] == "p_0"
