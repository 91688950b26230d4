"""attnlib.gpt (lesson 30) and the backward pieces it adds to attnlib.block.

Every gradient against central differences, on unequal sizes (vocab 7, d_model 8, d_ff 10,
2 heads of width 4, 2 blocks, sequences of 5 tokens, batch 3), so a wrong transpose or a
swapped axis cannot pass by symmetry; determinism; a short training run; the errors.
"""

import numpy as np
import pytest

import attnlib
from attnlib.gpt import (
    adam_step,
    cross_entropy,
    cross_entropy_backward,
    gpt_backward,
    gpt_forward,
    induction_batch,
    init_gpt,
)

VOCAB, D_MODEL, N_HEADS, N_LAYERS, D_FF, HALF, BATCH = 7, 8, 2, 2, 10, 3, 3


def random_model(seed=1):
    """A model whose every parameter is away from its initial value (gamma not 1, beta not 0)."""
    rng = np.random.default_rng(seed)
    params = init_gpt(VOCAB, D_MODEL, N_HEADS, N_LAYERS, D_FF, rng, std=0.5)
    for name in params:
        if name.startswith(("gamma", "beta", "b_")):
            params[name] = params[name] + rng.normal(0, 0.3, params[name].shape)
    return params, induction_batch(rng, BATCH, VOCAB, HALF)


def numerical_grads(params, tokens, targets, scored):
    def loss_with(name, W):
        old, params[name] = params[name], W
        try:
            return cross_entropy(gpt_forward(params, tokens)[0], targets, scored)
        finally:
            params[name] = old

    return {
        name: attnlib.central_difference(lambda W, name=name: loss_with(name, W), params[name])
        for name in params
        if name != "n_heads"
    }


def test_every_gradient_matches_central_differences():
    params, (tokens, targets, scored) = random_model()
    logits, cache = gpt_forward(params, tokens)
    grads = gpt_backward(params, cache, cross_entropy_backward(logits, targets, scored))
    want = numerical_grads(params, tokens, targets, scored)
    assert set(grads) == set(want)
    for name, G in grads.items():
        assert G.shape == params[name].shape, name
        assert attnlib.relative_error(G, want[name]) < 1e-6, name


def test_layer_norm_and_mlp_backward_match_central_differences():
    rng = np.random.default_rng(2)
    X, dY = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3, 5))
    gamma, beta = rng.normal(size=5), rng.normal(size=5)
    dX, dgamma, dbeta = attnlib.layer_norm_backward(X, dY, gamma)
    for got, wrt in ((dX, "X"), (dgamma, "gamma"), (dbeta, "beta")):
        args = {"X": X, "gamma": gamma, "beta": beta}

        def f(A, wrt=wrt, args=args):
            return float((attnlib.layer_norm(**{**args, wrt: A}) * dY).sum())

        assert attnlib.relative_error(got, attnlib.central_difference(f, args[wrt])) < 1e-6
    W_1, b_1, W_2, b_2 = (
        rng.normal(size=(5, 4)),
        rng.normal(size=4),
        rng.normal(size=(4, 6)),
        rng.normal(size=6),
    )
    dY = rng.normal(size=(2, 3, 6))
    names = ("X", "W_1", "b_1", "W_2", "b_2")
    args = dict(zip(names, (X, W_1, b_1, W_2, b_2), strict=True))
    grads = attnlib.mlp_backward(X, W_1, b_1, W_2, b_2, dY)
    for got, wrt in zip(grads, names, strict=True):

        def g(A, wrt=wrt):
            return float((attnlib.mlp(**{**args, wrt: A}) * dY).sum())

        assert attnlib.relative_error(got, attnlib.central_difference(g, args[wrt])) < 1e-6, wrt


def test_the_model_is_causal():
    params, (tokens, _, _) = random_model()
    changed = tokens.copy()
    changed[:, -1] = (changed[:, -1] + 1) % VOCAB  # change only the last token
    before, after = gpt_forward(params, tokens)[0], gpt_forward(params, changed)[0]
    np.testing.assert_array_equal(before[:, :-1], after[:, :-1])
    assert not np.allclose(before[:, -1], after[:, -1])


def test_cross_entropy_by_hand():
    # logits (0, log 3) give probabilities 1/4 and 3/4: the loss of target 1 is -log(3/4)
    logits = np.array([[[0.0, np.log(3)], [0.0, 0.0]]])
    assert cross_entropy(logits, [[1, 0]], [[True, False]]) == pytest.approx(-np.log(0.75))
    np.testing.assert_allclose(
        cross_entropy_backward(logits, [[1, 0]], [[True, False]]), [[[0.25, -0.25], [0, 0]]]
    )


def test_induction_batch_repeats_from_a_shift():
    tokens, targets, scored = induction_batch(np.random.default_rng(0), 200, 16, 8)
    assert tokens.shape == targets.shape == scored.shape == (200, 15)
    np.testing.assert_array_equal(tokens[:, 1:], targets[:, :-1])
    first = tokens[:, :8]
    assert all(len(set(row)) == 8 for row in first)  # distinct: one earlier occurrence each
    for row_tokens, row_targets, row_scored in zip(tokens, targets, scored, strict=True):
        for i in np.flatnonzero(row_scored):
            j = list(row_tokens[:8]).index(row_tokens[i])  # the earlier occurrence
            assert row_targets[i] == row_tokens[j + 1]
    shifts = {list(row[:8]).index(row[8]) for row in np.concatenate([tokens, targets[:, -1:]], 1)}
    assert len(shifts) == 8  # every shift appears, so no fixed offset solves the task


def train(steps, seed=0):
    rng = np.random.default_rng(seed)
    params, state, losses = init_gpt(8, 16, 1, 2, 32, rng, std=0.1), {}, []
    for _ in range(steps):
        tokens, targets, scored = induction_batch(rng, 16, 8, 4)
        logits, cache = gpt_forward(params, tokens)
        losses.append(cross_entropy(logits, targets, scored))
        dLogits = cross_entropy_backward(logits, targets, scored)
        adam_step(params, gpt_backward(params, cache, dLogits), state, lr=0.01)
    return params, losses


def test_training_lowers_the_loss_and_is_deterministic():
    params, losses = train(40)
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1
    again, losses_again = train(40)
    assert losses == losses_again
    for name in params:
        np.testing.assert_array_equal(params[name], again[name])


def test_adam_moves_each_entry_by_about_lr():
    params, state = {"w": np.array([1.0, -1.0, 0.0])}, {}
    for _ in range(3):
        adam_step(params, {"w": np.array([1e-6, -100.0, 5.0])}, state, lr=0.1)
    np.testing.assert_allclose(params["w"], [0.7, -0.7, -0.3], atol=5e-3)  # 1e-6 is near eps


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: init_gpt(7, 6, 2, 1, 4, np.random.default_rng(0)), "whole even number"),
        (lambda p: init_gpt(7, 8, 2, 1, 4, 0), "rng must be a numpy Generator"),
        (lambda p: gpt_forward(p, [1, 2]), r"shape \(B, n\).*got shape \(2,\)"),
        (lambda p: gpt_forward(p, [[1, 7]]), "from 0 to vocab - 1 = 6, got 1 to 7"),
        (lambda p: gpt_forward(p, [[0.5, 1]]), "whole numbers"),
        (lambda p: gpt_forward({"E": 1}, [[1]]), "params must be the dict init_gpt"),
        (
            lambda p: gpt_backward(p, gpt_forward(p, [[1, 2]])[1], np.zeros((1, 2, 6))),
            r"dLogits must have the logits' shape \(B, n, vocab\) = \(1, 2, 7\), got \(1, 2, 6\)",
        ),
        (lambda p: cross_entropy(np.zeros((1, 2, 3)), [[0, 3]]), "vocab - 1 = 2, got 0 to 3"),
        (lambda p: cross_entropy(np.zeros((1, 2, 3)), [[0]]), r"targets \(B, n\), got"),
        (lambda p: cross_entropy(np.zeros((1, 1, 3)), [[0]], [[False]]), "nothing to average"),
        (lambda p: induction_batch(np.random.default_rng(0), 2, 4, 5), "vocab >= half"),
        (lambda p: adam_step(p, {}, None, 0.1), "state must be a dict"),
        (lambda p: attnlib.layer_norm_backward(np.ones((2, 3)), np.ones((3, 2))), "dY must"),
        (
            lambda p: attnlib.mlp_backward(
                np.ones((2, 3)),
                np.ones((3, 4)),
                np.ones(4),
                np.ones((4, 5)),
                np.ones(5),
                np.ones((2, 3)),
            ),
            r"mlp_backward: dY must have the output's shape \(..., n, d_out\) = \(2, 5\)",
        ),
    ],
)
def test_errors_name_the_function_and_the_sizes(call, message):
    params, _ = random_model()
    with pytest.raises((ValueError, TypeError), match=message):
        call(params)
