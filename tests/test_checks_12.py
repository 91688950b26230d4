"""Checkers of lesson 12 (cost and memory): accept the reference answer, name every
mistake they know, and say "not attempted" for the stub."""

import numpy as np
import pytest

import attnlib
from attnlib.checkers import lesson_12 as L12
from attnlib.selfcheck import MISTAKES, exercise_ids
from tests.checker_cases import assert_mistake, assert_not_attempted, verdict

IDS = ["cost_matrix_mib", "cost_doubling", "online_rescale", "blocked_fix"]


def test_every_id_is_registered():
    assert set(IDS) <= set(exercise_ids())


def test_new_mistake_codes_have_hints():
    for code in [
        "linear_in_n",
        "float32_bytes",
        "decimal_megabytes",
        "blocked_memory_quadratic",
        "no_rescale",
        "rescale_inverted",
        "values_not_rescaled",
        "per_block_softmax",
    ]:
        assert MISTAKES[code]


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_not_attempted(exercise_id):
    assert_not_attempted(exercise_id)


def test_tuple_stubs_are_not_attempted():
    for exercise_id in ["cost_doubling", "online_rescale"]:
        assert verdict(exercise_id, (..., ...)).status == "not attempted"
    assert verdict("blocked_fix", lambda Q, K, V, block_size: ...).status == "not attempted"


# ---- cost_matrix_mib -----------------------------------------------------------------------


def test_cost_matrix_mib_accepts_the_reference():
    assert verdict("cost_matrix_mib", 4096 * 4096 * 8 / 2**20).passed
    assert verdict("cost_matrix_mib", 128).passed


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (4096 * 8 / 2**20, "linear_in_n"),
        (4096 * 4096 * 4 / 2**20, "float32_bytes"),
        (4096 * 4096 * 8 / 1e6, "decimal_megabytes"),
    ],
)
def test_cost_matrix_mib_names_mistakes(answer, mistake):
    assert_mistake("cost_matrix_mib", answer, mistake)


def test_cost_matrix_mib_other_wrong_answer_shows_the_value():
    feedback = verdict("cost_matrix_mib", 100)
    assert (feedback.passed, feedback.mistake) == (False, None)
    assert "100" in feedback.message and "128" in feedback.message


# ---- cost_doubling -------------------------------------------------------------------------


def test_cost_doubling():
    assert verdict("cost_doubling", (4, 2)).passed
    assert verdict("cost_doubling", (2, 2)).mistake == "linear_in_n"
    assert verdict("cost_doubling", (4, 4)).mistake == "blocked_memory_quadratic"
    wrong = verdict("cost_doubling", (4, 3))
    assert (wrong.passed, wrong.mistake) == (False, None)
    assert not verdict("cost_doubling", 4).passed  # not a pair: a message, no traceback


# ---- online_rescale ------------------------------------------------------------------------


def reference_update(m_old, l_old, block):
    m_new = max(m_old, float(block.max()))
    return m_new, l_old * np.exp(m_old - m_new) + np.exp(block - m_new).sum()


def test_online_rescale_accepts_the_reference_and_the_direct_sum():
    answer = reference_update(L12.M_OLD, L12.L_OLD, L12.BLOCK_2)
    assert verdict("online_rescale", answer).passed
    row = np.concatenate([L12.BLOCK_1, L12.BLOCK_2])
    assert verdict("online_rescale", (3, np.exp(row - 3).sum())).passed
    assert verdict("online_rescale", (3, 1.585)).passed  # rounded by hand


@pytest.mark.parametrize(
    "l_new, mistake",
    [
        (L12.L_OLD + np.exp(L12.BLOCK_2 - 3).sum(), "no_rescale"),
        (L12.L_OLD * np.exp(3 - L12.M_OLD) + np.exp(L12.BLOCK_2 - 3).sum(), "rescale_inverted"),
    ],
)
def test_online_rescale_names_mistakes(l_new, mistake):
    assert_mistake("online_rescale", (3.0, l_new), mistake)


# ---- blocked_fix: functions written the way the solution notebook writes them --------------


def blocked_attention(Q, K, V, block_size, rescale_l=True, rescale_a=True, inverted=False):
    n_q, d_k = Q.shape
    m = np.full((n_q, 1), -np.inf)
    l_sum = np.zeros((n_q, 1))
    a_sum = np.zeros((n_q, V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        S_b = Q @ K[start : start + block_size].T / np.sqrt(d_k)
        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
        P_b = np.exp(S_b - m_new)
        old_to_new = np.exp(m_new - m) if inverted else np.exp(m - m_new)
        if inverted:
            old_to_new = np.where(np.isfinite(m), old_to_new, 0.0)
        l_sum = (l_sum * old_to_new if rescale_l else l_sum) + P_b.sum(axis=1, keepdims=True)
        a_sum = (a_sum * old_to_new if rescale_a else a_sum) + P_b @ V[start : start + block_size]
        m = m_new
    return a_sum / l_sum


def attnlib_blocked(Q, K, V, block_size):
    return attnlib.blocked_attention(Q, K, V, block_size=block_size)


def test_blocked_fix_accepts_the_reference_and_attnlib():
    assert verdict("blocked_fix", blocked_attention).passed
    assert verdict("blocked_fix", attnlib_blocked).passed


def no_max(Q, K, V, block_size):
    l_sum, a_sum = 0.0, 0.0
    for s in range(0, K.shape[0], block_size):
        P_b = np.exp(Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1]))
        l_sum, a_sum = l_sum + P_b.sum(axis=1, keepdims=True), a_sum + P_b @ V[s : s + block_size]
    return a_sum / l_sum


def unscaled(Q, K, V, block_size):
    return blocked_attention(Q * np.sqrt(Q.shape[1]), K, V, block_size)


def per_block(Q, K, V, block_size):
    outs = []
    for s in range(0, K.shape[0], block_size):
        S_b = Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1])
        P_b = np.exp(S_b - S_b.max(axis=1, keepdims=True))
        outs.append(P_b / P_b.sum(axis=1, keepdims=True) @ V[s : s + block_size])
    return np.mean(outs, axis=0)


@pytest.mark.parametrize(
    "function, mistake",
    [
        (lambda Q, K, V, b: blocked_attention(Q, K, V, b, rescale_a=False), "values_not_rescaled"),
        (
            lambda Q, K, V, b: blocked_attention(Q, K, V, b, rescale_l=False, rescale_a=False),
            "no_rescale",
        ),
        (lambda Q, K, V, b: blocked_attention(Q, K, V, b, inverted=True), "rescale_inverted"),
        (per_block, "per_block_softmax"),
        (unscaled, "unscaled"),
        (no_max, "overflow"),
    ],
)
def test_blocked_fix_names_mistakes(function, mistake):
    assert_mistake("blocked_fix", function, mistake)


def test_blocked_fix_survives_a_function_that_raises_or_returns_junk():
    raised = verdict("blocked_fix", lambda Q, K, V, b: 1 / 0)
    assert raised.status == "error" and "ZeroDivisionError" in raised.message
    junk = verdict("blocked_fix", lambda Q, K, V, b: "output")
    assert (junk.passed, junk.mistake) == (False, None)
    assert not verdict("blocked_fix", 3.0).passed
