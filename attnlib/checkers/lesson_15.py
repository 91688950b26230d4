"""Checkers for lesson 15, attention inside a transformer block.

Ids: ``ln_by_hand`` (layer norm of one row by hand), ``ln_function`` (write layer_norm),
``ln_predict_scale`` (predict then check: X ten times larger), ``block_fix_residual``
(find the bug: the residual adds LN(X) instead of X), ``params_gpt2_medium`` (transfer:
count a wider block's parameters). Expected answers come from ``attnlib.block``.
"""

import numpy as np

from ..block import init_block, layer_norm, mlp, transformer_block
from ..heads import multi_head_attention
from ..selfcheck.exercise import Exercise
from . import widened

# ---- ln_by_hand -------------------------------------------------------------------------------
ROW = np.array([1.0, 5.0, 3.0, 3.0])


def _ln_unbiased(X, gamma=1.0, beta=0.0, eps=0.0):
    centred = X - X.mean(axis=-1, keepdims=True)
    return gamma * centred / np.sqrt(X.var(axis=-1, ddof=1, keepdims=True) + eps) + beta


def _ln_not_centred(X, gamma=1.0, beta=0.0, eps=0.0):
    return gamma * X / np.sqrt(X.var(axis=-1, keepdims=True) + eps) + beta


LN_BY_HAND = Exercise(
    id="ln_by_hand",
    lesson="15_transformer_block",
    kind="value",
    answer="x_hat",
    hints=[
        "First the mean of the row, then the mean of the squared distances from it.",
        "The mean is 3 and the variance (4 + 4 + 0 + 0) / 4 = 2: divide each distance by sqrt(2).",
    ],
    solution="x_hat = [-2 / np.sqrt(2), 2 / np.sqrt(2), 0, 0]  # mean 3, variance 2",
    expected=layer_norm(ROW, eps=0),
    mistakes={"ln_unbiased": _ln_unbiased(ROW), "ln_not_centred": _ln_not_centred(ROW)},
    decimals=3,
    name="x_hat",
)


# ---- ln_function: write layer_norm ------------------------------------------------------------
def _ln_columns(X, gamma, beta):
    centred = X - X.mean(axis=0, keepdims=True)
    return gamma * centred / np.sqrt(X.var(axis=0, keepdims=True) + 1e-5) + beta


_rng = np.random.default_rng(15)
LN_CASES = [
    # small spreads, where eps matters: n = 3 tokens, d_model = 4
    (_rng.normal(size=(3, 4)) * 0.3, _rng.normal(size=4), _rng.normal(size=4)),
    (_rng.normal(size=(5, 6)) * 2 + 1, np.ones(6), np.zeros(6)),  # n = 5, d_model = 6
    (
        np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 2.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0]]),
        np.ones(4),
        np.zeros(4),
    ),
]


LN_FUNCTION = Exercise(
    id="ln_function",
    lesson="15_transformer_block",
    kind="function",
    answer="layer_norm",
    hints=[
        "Work along the last axis with keepdims=True, so the mean and variance stay columns.",
        "Subtract the row's mean, divide by the square root of (variance + 1e-5), then "
        "scale by gamma and shift by beta; the variance is the mean squared distance from "
        "the mean.",
    ],
    solution="def layer_norm(X, gamma, beta):\n"
    "    mean = X.mean(axis=-1, keepdims=True)  # (n, 1)\n"
    "    var = ((X - mean) ** 2).mean(axis=-1, keepdims=True)  # (n, 1)\n"
    "    return gamma * (X - mean) / np.sqrt(var + 1e-5) + beta  # (n, d_model)",
    cases=LN_CASES,
    reference=lambda X, gamma, beta: layer_norm(X, gamma, beta),
    mistakes=[
        ("ln_unbiased", lambda X, g, b: _ln_unbiased(X, g, b, eps=1e-5)),
        ("ln_columns", _ln_columns),
        ("ln_not_centred", lambda X, g, b: _ln_not_centred(X, g, b, eps=1e-5)),
        ("ln_eps", lambda X, g, b: layer_norm(X, g, b, eps=0)),
    ],
    arg_names=("X", "gamma", "beta"),
)


# ---- ln_predict_scale -------------------------------------------------------------------------
LN_PREDICT_SCALE = Exercise(
    id="ln_predict_scale",
    written=(
        "Why does multiplying every token by 10 have that effect on the attention weights "
        "inside the block?"
    ),
    lesson="15_transformer_block",
    kind="choice",
    answer="prediction",
    hints=[
        "What does the first thing in the block, LN_1, do to a row that is 10 times larger?",
        "Work out LN(10 x): the row's mean and its spread are both multiplied by 10. What "
        "is left of the factor 10 after the division (eps aside)?",
    ],
    solution="prediction = 'unchanged'  # to 3 decimals: LN_1 removes each row's scale but eps",
    expected="unchanged",
    options=("unchanged", "sharper", "flatter"),
    mistakes={"sharper": "ln_scale_invariance", "flatter": "ln_scale_invariance"},
)


# ---- block_fix_residual: repair a transformer block -------------------------------------------
def _block_variant(mistake):
    def block(X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads):
        X_norm = layer_norm(X)
        attended = multi_head_attention(X_norm, X_norm, W_Q, W_K, W_V, W_O, n_heads)[0]
        if mistake == "post_norm":
            H = layer_norm(X + attended)
            return layer_norm(H + mlp(H, W_1, b_1, W_2, b_2))
        if mistake == "post_norm, the original layout":  # LN(X + Sublayer(X)), no LN before
            H = layer_norm(X + multi_head_attention(X, X, W_Q, W_K, W_V, W_O, n_heads)[0])
            return layer_norm(H + mlp(H, W_1, b_1, W_2, b_2))
        if mistake == "no_residual":
            H = attended
            return mlp(layer_norm(H), W_1, b_1, W_2, b_2)
        H = X_norm + attended  # residual_from_norm
        if mistake == "residual_from_norm, as in the broken block":
            return H + mlp(layer_norm(H), W_1, b_1, W_2, b_2)
        H_norm = layer_norm(H)  # both residuals from the normalised rows
        return H_norm + mlp(H_norm, W_1, b_1, W_2, b_2)

    return block


def _block_cases():
    rng = np.random.default_rng(16)
    cases = []
    for n, d_model, n_heads, d_ff in [(3, 4, 2, 8), (5, 6, 3, 7)]:
        weights = [rng.normal(size=(d_model, d_model)) for _ in range(4)]  # W_Q, W_K, W_V, W_O
        mlp_weights = [
            rng.normal(size=(d_model, d_ff)),
            rng.normal(size=d_ff),
            rng.normal(size=(d_ff, d_model)),
            rng.normal(size=d_model),
        ]
        cases.append((rng.normal(size=(n, d_model)) * 2, *weights, *mlp_weights, n_heads))
    return cases


BLOCK_FIX_RESIDUAL = Exercise(
    id="block_fix_residual",
    lesson="15_transformer_block",
    kind="function",
    answer="transformer_block",
    hints=[
        "Compare the broken block with the two formulas line by line: what is each branch "
        "added to?",
        "H = X + attention(LN_1(X)): the residual carries X itself, not its normalised copy.",
    ],
    solution="def transformer_block(X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads):\n"
    "    X_norm = attnlib.layer_norm(X)  # (n, d_model)\n"
    "    H = X + attnlib.multi_head_attention(X_norm, X_norm, W_Q, W_K, W_V, W_O, n_heads)[0]\n"
    "    return H + attnlib.mlp(attnlib.layer_norm(H), W_1, b_1, W_2, b_2)  # (n, d_model)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*_block_cases(), widened(_block_cases()[1], 1, 60)],
    reference=lambda X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads: transformer_block(
        X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads
    )[0],
    mistakes=[
        ("residual_from_norm", _block_variant("residual_from_norm, as in the broken block")),
        ("residual_from_norm", _block_variant("residual_from_norm")),
        ("post_norm", _block_variant("post_norm")),
        ("post_norm", _block_variant("post_norm, the original layout")),
        ("no_residual", _block_variant("no_residual")),
    ],
    arg_names=("X", "W_Q", "W_K", "W_V", "W_O", "W_1", "b_1", "W_2", "b_2", "n_heads"),
)


# ---- params_gpt2_medium: count a wider block ------------------------------------------------
_MEDIUM = init_block(1024, 4096)  # zeros: the shapes are what counts
_ATTENTION = sum(_MEDIUM[name].size for name in ("W_Q", "W_K", "W_V", "W_O"))
_MATRICES = sum(p.size for name, p in _MEDIUM.items() if name.startswith("W_"))
_ALL = sum(p.size for p in _MEDIUM.values())
del _MEDIUM

PARAMS_GPT2_MEDIUM = Exercise(
    id="params_gpt2_medium",
    lesson="15_transformer_block",
    kind="value",
    answer="n_params",
    hints=[
        "List the block's arrays and their shapes, as the lesson's sizes table does.",
        "4 d^2 + 2 d d_ff + d_ff + 5 d, with d = 1024 and d_ff = 4096.",
    ],
    solution=f"n_params = 4 * 1024**2 + 2 * 1024 * 4096 + 4096 + 5 * 1024  # = {_ALL:,}",
    expected=_ALL,
    mistakes={
        "params_times_heads": _ALL + 15 * _ATTENTION,
        "params_no_vectors": _MATRICES,
    },
    name="the number of parameters",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    LN_BY_HAND,
    LN_FUNCTION,
    LN_PREDICT_SCALE,
    BLOCK_FIX_RESIDUAL,
    PARAMS_GPT2_MEDIUM,
)
