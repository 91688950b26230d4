"""Checkers for lesson 07, the whole formula.

Ids: ``formula_shapes`` (predict the shapes of the weights and the output),
``formula_self_attention`` (write self-attention from the tokens and the three weight
matrices), ``formula_predict_reorder`` (predict, then check: reorder the keys and values
together), ``formula_temperature`` (transfer: attention with a temperature). The required
``attention`` (the repaired broken attention, whose one bug is a softmax down the columns)
lives in formula.py.
Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention_weights, qk_scores, scale_scores, softmax
from ..selfcheck.exercise import Exercise
from ..selfcheck.judge import passed, wrong
from . import (
    SCALE_SOFTMAX_MISTAKES,
    formula,
    naive_softmax,
    self_attention,
    self_attention_with,
    widened,
)

# ---- formula_shapes: (weights_shape, output_shape) for n_q=3, n_k=5, d_k=4, d_v=2 ----------
N_Q, N_K, D_K, D_V = 3, 5, 4, 2
_rng = np.random.default_rng(7)
_Qs, _Ks, _Vs = (_rng.normal(size=s) for s in ((N_Q, D_K), (N_K, D_K), (N_K, D_V)))
_A = attention_weights(_Qs, _Ks)
SHAPES = (_A.shape, (_A @ _Vs).shape)  # computed, not typed: ((3, 5), (3, 2))


def _as_shape(item):
    try:
        shape = tuple(int(n) for n in item)
    except (TypeError, ValueError):
        return None
    return shape if all(float(n) == s for n, s in zip(item, shape, strict=True)) else None


def _formula_shapes(answer):
    pair = "a pair (weights_shape, output_shape), e.g. ((1, 2), (3, 4))"
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()  # np.array([[3, 5], [3, 2]]) -> [[3, 5], [3, 2]]
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return wrong(f"expected {pair}.")
    if all(np.ndim(item) == 0 and not isinstance(item, str) for item in answer):
        return wrong(f"that looks like one shape; expected {pair}.")
    got = [_as_shape(item) for item in answer]
    for shape, label in zip(got, ("weights_shape", "output_shape"), strict=True):
        if shape is None:
            return wrong(f"{label} should be a tuple of whole numbers like (1, 2).")
    weights_shape, output_shape = got
    if weights_shape == SHAPES[0][::-1]:
        return wrong("", mistake="transposed")
    if weights_shape != SHAPES[0]:
        return wrong(f"weights_shape {weights_shape} differs.")
    if output_shape != SHAPES[1]:
        return wrong("", mistake="output_shape")
    return passed()


FORMULA_SHAPES = Exercise(
    id="formula_shapes",
    lesson="07_the_whole_formula",
    kind="value",
    answer="shapes",
    hints=[
        "The weights have one row per query and one column per key.",
        "The output has one row per query; each row is a blend of value rows of width d_v.",
    ],
    solution=lambda: f"shapes = ({SHAPES[0]}, {SHAPES[1]})",
    expected=SHAPES,
    mistakes={  # for the tests: the rule above names these
        "transposed": (SHAPES[0][::-1], SHAPES[1]),
        "output_shape": (SHAPES[0], (N_Q, D_K)),
    },
    rule=_formula_shapes,
)


# ---- formula_self_attention: write it from X, W_Q, W_K, W_V ---------------------------------
_r = np.random.default_rng(8)
SELF_ATTENTION_CASES = [
    tuple(_r.normal(size=s) for s in ((5, 6), (6, 4), (6, 4), (6, 3))),  # d_model 6, d_k 4, d_v 3
    (ex.X, ex.W_Q, ex.W_K, ex.W_V),  # the worked example
    (  # large scores: entries of Q and K around 25, scores around 2500
        _r.normal(size=(4, 3)) + 5,
        np.abs(_r.normal(size=(3, 2))) + 1,
        np.abs(_r.normal(size=(3, 2))) + 1,
        _r.normal(size=(3, 5)),
    ),
]
SELF_ATTENTION_MISTAKES = [
    ("swapped_qk", self_attention_with(q_from="K", k_from="Q")),
    ("swapped_qk", self_attention_with(q_from="K", k_from="K")),  # W_K where W_Q belongs
    ("swapped_qk", self_attention_with(q_from="Q", k_from="Q")),  # W_Q where W_K belongs
    ("transposed", self_attention_with(transpose_weights=True)),
    *SCALE_SOFTMAX_MISTAKES,
]


FORMULA_SELF_ATTENTION = Exercise(
    id="formula_self_attention",
    lesson="07_the_whole_formula",
    kind="function",
    answer="self_attention",
    hints=[
        "Three projections of the same X: Q = X @ W_Q, K = X @ W_K, V = X @ W_V.",
        "Then the four steps: scores, scale by sqrt(d_k) (the width of Q), softmax rows, blend.",
        "Reuse the attention you repaired in exercise 2 on the three projections: it reads "
        "d_k from the keys' width by itself.",
    ],
    solution="def self_attention(X, W_Q, W_K, W_V):\n"
    "    Q = X @ W_Q  # (n, d_k)\n"
    "    K = X @ W_K  # (n, d_k)\n"
    "    V = X @ W_V  # (n, d_v)\n"
    "    return attention(Q, K, V)  # (n, d_v)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[
        *SELF_ATTENTION_CASES,
        widened(SELF_ATTENTION_CASES[0], 1, 100),
    ],
    reference=self_attention,
    mistakes=SELF_ATTENTION_MISTAKES,
    arg_names=("X", "W_Q", "W_K", "W_V"),
)


# ---- formula_predict_reorder --------------------------------------------------------------
FORMULA_PREDICT_REORDER = Exercise(
    id="formula_predict_reorder",
    lesson="07_the_whole_formula",
    kind="choice",
    answer="prediction",
    hints=[
        "Output row i is a sum over the keys j of weight[i, j] times V[j].",
        "Reordering the keys moves each weight to a new column, and V's rows move with "
        "their keys: each term weight[i, j] V[j] is still there, listed at a new place. "
        "Does a sum depend on the order of its terms?",
    ],
    solution="prediction = 'same'  # the weighted sums only change the order of their terms",
    expected="same",
    options=["same", "rows reordered", "different"],
    mistakes={"rows reordered": "order_matters", "different": "order_matters"},
    written=(
        "Why does reordering the keys together with their values have that effect on the output?"
    ),
)


# ---- formula_temperature: softmax(Q K^T / (sqrt(d_k) T)) V ----------------------------------
def attention_at_temperature(Q, K, V, T):
    """The reference: the scaled scores divided by the temperature T, then softmax and blend."""
    S_scaled = scale_scores(qk_scores(Q, K), Q.shape[-1])  # (n_q, n_k)
    return softmax(S_scaled / T) @ V  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)


def _at_temperature(weights_of):
    def variant(Q, K, V, T):
        return weights_of(Q @ K.T, np.sqrt(Q.shape[-1]), T) @ V

    return variant


_r = np.random.default_rng(70)
_Q34, _K54, _V52 = (_r.normal(size=s) for s in ((3, 4), (5, 4), (5, 2)))
TEMPERATURE_CASES = [
    (_Q34, _K54, _V52, 0.5),  # sharper than the formula
    (_Q34, _K54, _V52, 3.0),  # flatter
    # the worked example, at T = 1.5: at T = d_k = 2, S / (sqrt(d_k) sqrt(T)) is S / T, so a
    # root of T taken by mistake would be named "unscaled"
    (ex.Q, ex.K, ex.V, 1.5),
    (_Q34 * 30, _K54 * 30, _V52, 0.25),  # scores around 1e3, sharpened: exp must not overflow
]
TEMPERATURE_MISTAKES = [
    ("temperature_inverted", _at_temperature(lambda S, root, T: softmax(S / root * T))),
    ("unscaled", _at_temperature(lambda S, root, T: softmax(S / T))),
    ("wrong_axis", _at_temperature(lambda S, root, T: softmax(S / root / T, axis=0))),
    ("overflow", _at_temperature(lambda S, root, T: naive_softmax(S / root / T))),
]


FORMULA_TEMPERATURE = Exercise(
    id="formula_temperature",
    lesson="07_the_whole_formula",
    kind="function",
    answer="attention_with_temperature",
    hints=[
        "T divides the scaled scores Q K^T / sqrt(d_k), just before softmax. (The "
        "playground's multiplier replaced 1/sqrt(d_k) on the raw scores: with d_k = 2, T = "
        "2 is the playground at 1 / (2 sqrt 2), about 0.354.)",
        "Divide by T: T = 2 halves every gap between scaled scores, so the weights get flatter.",
        "A small T makes the divided scores large: subtract each row's maximum of the "
        "divided scores before exp, or scores around 1000 overflow.",
    ],
    solution="def attention_with_temperature(Q, K, V, T):\n"
    "    S_scaled = Q @ K.T / np.sqrt(Q.shape[-1])  # (n_q, n_k)\n"
    "    Z = S_scaled / T  # the temperature divides the scaled scores\n"
    "    Z = Z - Z.max(axis=-1, keepdims=True)  # after dividing: a small T makes big scores\n"
    "    A = np.exp(Z) / np.exp(Z).sum(axis=-1, keepdims=True)\n"
    "    return A @ V  # (n_q, d_v)",
    cases=TEMPERATURE_CASES,
    reference=attention_at_temperature,
    mistakes=TEMPERATURE_MISTAKES,
    arg_names=("Q", "K", "V", "T"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    FORMULA_SHAPES,
    formula.ATTENTION,
    FORMULA_SELF_ATTENTION,
    FORMULA_PREDICT_REORDER,
    FORMULA_TEMPERATURE,
)
