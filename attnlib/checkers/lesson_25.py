"""Checkers for lesson 25, a tiny GPT assembled and trained in numpy.

Ids: ``gpt_cross_entropy_by_hand`` (by hand: the loss and its gradient for one row of
logits), ``gpt_layer_norm_backward`` (write layer norm's backward pass),
``gpt_predict_first_loss`` (predict: the loss of an untrained model on the induction task),
``gpt_fix_embedding_backward`` (find the bug: an embedding gradient that loses repeated
tokens), ``gpt_tied_gradient`` (transfer: the gradient of E when W_U = E^T). Expected
answers come from ``attnlib.block``, ``attnlib.gpt`` and numpy.
"""

import numpy as np

from ..block import layer_norm_backward
from ..gpt import cross_entropy, cross_entropy_backward
from ..selfcheck.exercise import Exercise

LESSON = "25_tiny_gpt"

# ---- gpt_cross_entropy_by_hand: logits (0, log 2, log 5), the next token is 1 ----------------
Z = np.log(np.array([1.0, 2.0, 5.0]))  # (vocab,) = (3,): exp gives 1, 2, 5, which sum to 8
T = 1
LOSS = cross_entropy(Z[None, None], [[T]])  # -log(2/8) = log 4
DZ = cross_entropy_backward(Z[None, None], [[T]])[0, 0]  # (1, 2, 5) / 8 - (0, 1, 0)
P = np.exp(Z) / np.exp(Z).sum()

GPT_CROSS_ENTROPY_BY_HAND = Exercise(
    id="gpt_cross_entropy_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(loss, dz)",
    hints=[
        "exp of the logits is (1, 2, 5): softmax divides by their sum, 8.",
        "loss = -log(p_1) = -log(2/8); dz = p - onehot(1), so subtract 1 at index 1 only.",
        "Check: the three entries of dz sum to 0, and only the right token's entry is negative.",
    ],
    solution=lambda: (
        "p = np.array([1, 2, 5]) / 8  # softmax of (0, log 2, log 5)\n"
        "loss = -np.log(p[1])\n"
        "dz = p - np.array([0, 1, 0])\n"
        f"# loss = {LOSS:.3f}, dz = {np.round(DZ, 3)}"
    ),
    expected=(LOSS, DZ),
    mistakes={
        0: {"ce_sign": -LOSS, "ce_log10": -float(np.log10(P[T]))},
        1: {"ce_grad_no_onehot": P, "ce_grad_sign": -DZ},
    },
    decimals=3,
    names=("loss", "dz"),
)


# ---- gpt_layer_norm_backward: dX, dgamma, dbeta of layer norm (eps = 1e-5) -------------------
def _layer_norm_reference(X, gamma, dY):
    return layer_norm_backward(X, dY, gamma)


def layer_norm_grads(X, gamma, dY, mean=True, projection=True, use_gamma=True):
    """Layer norm's backward, with switches that make each named mistake."""
    mu = X.mean(axis=1, keepdims=True)
    sigma = np.sqrt(((X - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    X_hat = (X - mu) / sigma
    g = dY * gamma if use_gamma else dY
    dX = g
    if mean:
        dX = dX - g.mean(axis=1, keepdims=True)
    if projection:
        dX = dX - X_hat * (g * X_hat).mean(axis=1, keepdims=True)
    return dX / sigma, (dY * X_hat).sum(axis=0), dY.sum(axis=0)


_rng = np.random.default_rng(950)
LAYER_NORM_CASES = [
    # n = 4 tokens, d_model = 5; gamma away from 1 so forgetting it shows
    (_rng.normal(size=(4, 5)), _rng.normal(1.0, 0.5, size=5), _rng.normal(size=(4, 5))),
    # n = 3, d_model = 6, rows of very different sizes
    (
        _rng.normal(size=(3, 6)) * [[0.1], [1.0], [30.0]],
        _rng.normal(size=6),
        _rng.normal(size=(3, 6)),
    ),
    # the worked example's X, gamma = 2, dY asks for column 0
    (np.array([[1.0, 0, 2, 0], [0, 2, 0, 1], [1, 1, 1, 0]]), np.full(4, 2.0), np.eye(3, 4)),
]

GPT_LAYER_NORM_BACKWARD = Exercise(
    id="gpt_layer_norm_backward",
    lesson=LESSON,
    kind="function",
    answer="layer_norm_backward",
    hints=[
        "Recompute each row's mean, sigma = sqrt(var + 1e-5) and x_hat = (x - mean) / "
        "sigma; then g = dY * gamma.",
        "dX takes g, subtracts its row mean and x_hat times the row mean of g * x_hat, and "
        "divides by sigma; every mean runs along the row (axis=1, keepdims=True).",
        "gamma and beta are shared by every row: their gradients add up over the rows "
        "(axis=0), dY times x_hat for gamma and dY alone for beta.",
    ],
    solution="def layer_norm_backward(X, gamma, dY):\n"
    "    mean = X.mean(axis=1, keepdims=True)  # (n, 1)\n"
    "    sigma = np.sqrt(((X - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)  # (n, 1)\n"
    "    X_hat = (X - mean) / sigma  # (n, d_model)\n"
    "    g = dY * gamma  # the gradient reaching X_hat\n"
    "    dX = (g - g.mean(axis=1, keepdims=True)\n"
    "          - X_hat * (g * X_hat).mean(axis=1, keepdims=True)) / sigma\n"
    "    return dX, (dY * X_hat).sum(axis=0), dY.sum(axis=0)",
    cases=LAYER_NORM_CASES,
    reference=_layer_norm_reference,
    mistakes=[
        ("ln_backward_no_mean", lambda *args: layer_norm_grads(*args, mean=False)),
        ("ln_backward_no_projection", lambda *args: layer_norm_grads(*args, projection=False)),
        ("ln_backward_gamma_forgotten", lambda *args: layer_norm_grads(*args, use_gamma=False)),
    ],
    arg_names=("X", "gamma", "dY"),
    result_names=("dX", "dgamma", "dbeta"),
)


# ---- gpt_predict_first_loss: an untrained model (std 0.02), vocabulary 12 --------------------
VOCAB = 12
FIRST_LOSS = float(np.log(VOCAB))  # logits near 0: every token about 1/12

GPT_PREDICT_FIRST_LOSS = Exercise(
    id="gpt_predict_first_loss",
    lesson=LESSON,
    kind="value",
    answer="first_loss",
    hints=[
        "With weights of spread 0.02 every logit is close to 0. What probability does "
        "softmax give each of 12 tokens then?",
        "The loss is minus the log of the right token's probability: put in your answer to "
        "the first hint. The logits are small but not exactly 0; the exercise text says "
        "how far a real first loss lands from that value.",
    ],
    solution=lambda: f"first_loss = np.log(12)  # {FIRST_LOSS:.3f}",
    expected=FIRST_LOSS,
    mistakes={
        "untrained_probability": 1 / VOCAB,
        "ce_log10": float(np.log10(VOCAB)),
        "ce_sign": -FIRST_LOSS,
    },
    decimals=3,  # the lesson prints log 12 = 2.485
    name="first_loss",
)


# ---- gpt_fix_embedding_backward: dE from dX, repeated tokens included ------------------------
def _embedding_reference(tokens, dX, vocab):
    dE = np.zeros((vocab, dX.shape[-1]))
    for b, i in np.ndindex(tokens.shape):  # every position adds its row to its token's row
        dE[tokens[b, i]] += dX[b, i]
    return dE


def _embedding_fancy(tokens, dX, vocab):
    dE = np.zeros((vocab, dX.shape[-1]))
    dE[tokens] += dX  # one write per distinct token: repeats are lost
    return dE


def _embedding_mean(tokens, dX, vocab):
    dE = _embedding_reference(tokens, dX, vocab)
    counts = np.bincount(tokens.ravel(), minlength=vocab)[:, None]  # (vocab, 1)
    return dE / np.maximum(counts, 1)


_rng = np.random.default_rng(951)
EMBEDDING_CASES = [
    # B = 2 sequences of n = 5, vocab 7 (tokens 5 and 6 unused), d_model = 3; repeats
    (np.array([[0, 3, 1, 3, 3], [2, 0, 4, 1, 0]]), _rng.normal(size=(2, 5, 3)), 7),
    # one sequence with every token different: no repeats to lose
    (np.array([[4, 1, 0, 2]]), _rng.normal(size=(1, 4, 2)), 5),
    # the same token everywhere
    (np.full((3, 2), 1), _rng.normal(size=(3, 2, 4)), 2),
]

GPT_FIX_EMBEDDING_BACKWARD = Exercise(
    id="gpt_fix_embedding_backward",
    lesson=LESSON,
    kind="function",
    answer="embedding_backward",
    hints=[
        "Try the broken function on tokens [[3, 3]]: row 3 of dE should be dX[0, 0] + dX[0, 1].",
        "dE[tokens] += dX reads dE[tokens], adds, and writes back once per index: a "
        "repeated index keeps only its last write.",
        "np.add.at(array, indices, values) adds without buffering, so a repeated index "
        "adds every time; a loop over the positions (b, i) does the same.",
    ],
    solution="def embedding_backward(tokens, dX, vocab):\n"
    "    dE = np.zeros((vocab, dX.shape[-1]))  # (vocab, d_model)\n"
    "    np.add.at(dE, tokens, dX)  # every position adds its row, repeats included\n"
    "    return dE",
    cases=EMBEDDING_CASES,
    reference=_embedding_reference,
    mistakes=[
        ("embedding_repeat_lost", _embedding_fancy),
        ("embedding_averaged", _embedding_mean),
    ],
    arg_names=("tokens", "dX", "vocab"),
    result_names=("dE",),
)


# ---- gpt_tied_gradient: W_U = E^T, so E's gradient comes by two paths ------------------------
def _tied_reference(dE, dW_U):
    return dE + dW_U.T  # (vocab, d_model) + (d_model, vocab)^T


_rng = np.random.default_rng(952)
TIED_CASES = [
    (_rng.normal(size=(7, 4)), _rng.normal(size=(4, 7))),  # vocab 7, d_model 4
    (_rng.normal(size=(3, 5)), _rng.normal(size=(5, 3))),
]

GPT_TIED_GRADIENT = Exercise(
    id="gpt_tied_gradient",
    lesson=LESSON,
    kind="function",
    answer="tied_gradient",
    hints=[
        "E is used twice: to embed the tokens and, transposed, to score the next token.",
        "Lesson 17: when a variable feeds several places, its gradients add up.",
        "dW_U has shape (d_model, vocab) and E has (vocab, d_model): turn the second "
        "path's gradient into E's shape before adding.",
    ],
    solution="def tied_gradient(dE, dW_U):\n"
    "    return dE + dW_U.T  # (vocab, d_model): both paths, the second turned back",
    cases=TIED_CASES,
    reference=_tied_reference,
    mistakes=[
        ("tied_one_path", lambda dE, dW_U: dE),
        ("tied_one_path", lambda dE, dW_U: dW_U.T),
        ("tied_not_transposed", lambda dE, dW_U: dE + dW_U.reshape(dE.shape)),
    ],
    arg_names=("dE", "dW_U"),
    result_names=("dE_tied",),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    GPT_CROSS_ENTROPY_BY_HAND,
    GPT_LAYER_NORM_BACKWARD,
    GPT_PREDICT_FIRST_LOSS,
    GPT_FIX_EMBEDDING_BACKWARD,
    GPT_TIED_GRADIENT,
)
