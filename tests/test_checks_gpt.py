"""The checkers of lesson 30 (a tiny GPT), with answers written the way a learner writes them:
numpy only, never taken from attnlib, so a checker cannot pass by comparing the package with
itself. Each right answer passes; each slip a learner makes is named with its own code; an
unfilled cell is "not attempted"."""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed

P = np.array([1.0, 2.0, 5.0]) / 8  # softmax of (0, log 2, log 5)
ONEHOT = np.array([0.0, 1.0, 0.0])


def layer_norm_backward(X, gamma, dY, mean=True, projection=True, use_gamma=True):
    mu = X.mean(axis=1, keepdims=True)
    sigma = np.sqrt(((X - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    X_hat = (X - mu) / sigma
    g = dY * gamma if use_gamma else dY
    dX = g - (g.mean(axis=1, keepdims=True) if mean else 0)
    if projection:
        dX = dX - X_hat * (g * X_hat).mean(axis=1, keepdims=True)
    return dX / sigma, (dY * X_hat).sum(axis=0), dY.sum(axis=0)


def layer_norm_backward_loop(X, gamma, dY):
    # one row and one entry at a time, from the chain rule through mean and sigma
    n, d = X.shape
    dX = np.zeros_like(X)
    for r in range(n):
        mu = sum(X[r]) / d
        sigma = (sum((x - mu) ** 2 for x in X[r]) / d + 1e-5) ** 0.5
        x_hat = [(x - mu) / sigma for x in X[r]]
        g = [dY[r, j] * gamma[j] for j in range(d)]
        g_mean = sum(g) / d
        along = sum(g[j] * x_hat[j] for j in range(d)) / d
        for j in range(d):
            dX[r, j] = (g[j] - g_mean - x_hat[j] * along) / sigma
    X_hat = (X - X.mean(axis=1, keepdims=True)) / np.sqrt(X.var(axis=1, keepdims=True) + 1e-5)
    return dX, (dY * X_hat).sum(axis=0), dY.sum(axis=0)


def embedding_backward(tokens, dX, vocab):
    dE = np.zeros((vocab, dX.shape[-1]))
    np.add.at(dE, tokens, dX)
    return dE


def embedding_backward_loop(tokens, dX, vocab):
    dE = np.zeros((vocab, dX.shape[-1]))
    for b in range(tokens.shape[0]):
        for i in range(tokens.shape[1]):
            dE[tokens[b, i]] += dX[b, i]
    return dE


def embedding_backward_fancy(tokens, dX, vocab):
    dE = np.zeros((vocab, dX.shape[-1]))
    dE[tokens] += dX
    return dE


def embedding_backward_mean(tokens, dX, vocab):
    counts = np.bincount(tokens.ravel(), minlength=vocab)[:, None]
    return embedding_backward(tokens, dX, vocab) / np.maximum(counts, 1)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("gpt_cross_entropy_by_hand", (np.log(4), P - ONEHOT)),
        ("gpt_cross_entropy_by_hand", (1.386, [0.125, -0.75, 0.625])),  # by hand, 3 decimals
        ("gpt_layer_norm_backward", layer_norm_backward),
        ("gpt_layer_norm_backward", layer_norm_backward_loop),
        ("gpt_predict_first_loss", np.log(12)),
        ("gpt_predict_first_loss", 2.485),
        ("gpt_fix_embedding_backward", embedding_backward),
        ("gpt_fix_embedding_backward", embedding_backward_loop),
        ("gpt_tied_gradient", lambda dE, dW_U: dE + dW_U.T),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("gpt_cross_entropy_by_hand", (-np.log(4), P - ONEHOT), "ce_sign"),
        ("gpt_cross_entropy_by_hand", (-np.log10(0.25), P - ONEHOT), "ce_log10"),
        ("gpt_cross_entropy_by_hand", (np.log(4), P), "ce_grad_no_onehot"),
        ("gpt_cross_entropy_by_hand", (np.log(4), ONEHOT - P), "ce_grad_sign"),
        (
            "gpt_layer_norm_backward",
            lambda *a: layer_norm_backward(*a, mean=False),
            "ln_backward_no_mean",
        ),
        (
            "gpt_layer_norm_backward",
            lambda *a: layer_norm_backward(*a, projection=False),
            "ln_backward_no_projection",
        ),
        (
            "gpt_layer_norm_backward",
            lambda *a: layer_norm_backward(*a, use_gamma=False),
            "ln_backward_gamma_forgotten",
        ),
        ("gpt_predict_first_loss", 1 / 12, "untrained_probability"),
        ("gpt_predict_first_loss", np.log10(12), "ce_log10"),
        ("gpt_predict_first_loss", -np.log(12), "ce_sign"),
        ("gpt_fix_embedding_backward", embedding_backward_fancy, "embedding_repeat_lost"),
        ("gpt_fix_embedding_backward", embedding_backward_mean, "embedding_averaged"),
        ("gpt_tied_gradient", lambda dE, dW_U: dE, "tied_one_path"),
        ("gpt_tied_gradient", lambda dE, dW_U: dW_U.T, "tied_one_path"),
        ("gpt_tied_gradient", lambda dE, dW_U: dE + dW_U.reshape(dE.shape), "tied_not_transposed"),
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("gpt_cross_entropy_by_hand", (..., ...)),
        ("gpt_layer_norm_backward", lambda X, gamma, dY: ...),
        ("gpt_predict_first_loss", ...),
        ("gpt_fix_embedding_backward", lambda tokens, dX, vocab: ...),
        ("gpt_tied_gradient", lambda dE, dW_U: ...),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_the_layer_norm_formula_matches_attnlib_and_the_loop():
    # the formula the exercise teaches, checked against the package's backward outside the checker
    import attnlib

    rng = np.random.default_rng(4)
    X, gamma, dY = rng.normal(size=(3, 6)), rng.normal(size=6), rng.normal(size=(3, 6))
    for got, want in zip(
        layer_norm_backward_loop(X, gamma, dY),
        attnlib.layer_norm_backward(X, dY, gamma),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, atol=1e-12)
