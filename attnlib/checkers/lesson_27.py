"""Checkers for lesson 27, multi-head latent attention.

Ids: ``mla_by_hand`` (by hand: seeds' cached row and its rebuilt key), ``mla_absorbed_scores``
(write the scores of one query against the cache with W_UK absorbed), ``mla_cache`` (transfer:
the cache per token of multi-head latent attention against multi-head attention).
"""

import numpy as np

from .. import example as ex
from ..selfcheck.exercise import Exercise

LESSON = "27_latent_attention"

# ---- mla_by_hand: seeds' latent row and its rebuilt key, with a latent of width 2 ----------
W_DKV_2 = np.array([[1, 0], [0, 1], [1, 1], [0, 2]], dtype=float)  # (d_model, d_c) = (4, 2)
W_UK_2 = np.array([[1, 1], [0, 1]], dtype=float)  # (d_c, d_k) = (2, 2)
C_SEEDS = ex.X[2] @ W_DKV_2  # (d_model,) @ (d_model, d_c) -> (d_c,): the cached row
K_SEEDS = C_SEEDS @ W_UK_2  # (d_c,) @ (d_c, d_k) -> (d_k,): the key rebuilt from it

MLA_BY_HAND = Exercise(
    id="mla_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(c, k)",
    hints=[
        "c = x W_DKV: entry j of c is x times column j of W_DKV, four products added.",
        "Then k = c W_UK: entry j of k is c times column j of W_UK, two products added.",
    ],
    solution="c = (1 * 1 + 1 * 0 + 0 * 1 + 1 * 0, 1 * 0 + 1 * 1 + 0 * 1 + 1 * 2)  # x W_DKV\n"
    "k = (c[0] * 1 + c[1] * 0, c[0] * 1 + c[1] * 1)  # c W_UK",
    expected=(C_SEEDS, K_SEEDS),
    mistakes={1: {"mla_uk_transposed": C_SEEDS @ W_UK_2.T}},
    decimals=2,
    names=("c", "k"),
)


# ---- mla_absorbed_scores: every cached row scored by the query with W_UK absorbed ----------
def absorbed_scores(q, C, W_UK):
    """q (d_k,), C (n, d_c), W_UK (d_c, d_k) -> (n,): q k_j / sqrt(d_k), k_j = c_j W_UK."""
    q = np.asarray(q, dtype=np.float64)
    q_absorbed = q @ np.asarray(W_UK, dtype=np.float64).T  # (d_k,) @ (d_k, d_c) -> (d_c,)
    return np.asarray(C, dtype=np.float64) @ q_absorbed / np.sqrt(q.shape[-1])  # (n,)


def _absorbed_by_d_c(q, C, W_UK):
    return absorbed_scores(q, C, W_UK) * np.sqrt(np.shape(q)[-1] / np.shape(C)[-1])


def _absorbed_unscaled(q, C, W_UK):
    return absorbed_scores(q, C, W_UK) * np.sqrt(np.shape(q)[-1])


_rng = np.random.default_rng(93)
_W_DKV = np.array([[1, 0, 2], [0, 1, 0], [1, 0, 1], [1, 0, 2]], dtype=float)  # the lesson's
_W_UK = np.array([[1, 0], [0, 1], [0, 0]], dtype=float)  # (d_c, d_k) = (3, 2)
ABSORB_CASES = [
    (ex.Q[0], ex.X @ _W_DKV, _W_UK),  # birds: 3, 9, 6 divided by sqrt(2)
    tuple(_rng.normal(size=s) for s in [(3,), (5, 4), (4, 3)]),  # d_k = 3, d_c = 4
    tuple(_rng.normal(size=s) for s in [(2,), (6, 5), (5, 2)]),
    tuple(_rng.normal(size=s) for s in [(4,), (3, 7), (7, 4)]),
]

MLA_ABSORBED_SCORES = Exercise(
    id="mla_absorbed_scores",
    lesson=LESSON,
    kind="function",
    answer="absorbed_scores",
    hints=[
        "Absorbing W_UK turns the query once: q W_UK^T, a row of width d_c that meets the "
        "cached rows directly.",
        "One product of C with that row gives every score at once; then divide as attention "
        "always does, by the square root of the width of q and k.",
    ],
    solution="def absorbed_scores(q, C, W_UK):\n"
    "    q_absorbed = q @ W_UK.T  # (d_k,) @ (d_k, d_c) -> (d_c,): the query turned once\n"
    "    return C @ q_absorbed / np.sqrt(len(q))  # (n, d_c) @ (d_c,) -> (n,)",
    cases=ABSORB_CASES,
    reference=absorbed_scores,
    mistakes=[("mla_scaled_by_d_c", _absorbed_by_d_c), ("unscaled", _absorbed_unscaled)],
    arg_names=("q", "C", "W_UK"),
)


# ---- mla_cache: numbers cached per token, latent against multi-head ---------------------------
MLA_LAYERS, MLA_HEADS, MLA_D_HEAD, MLA_D_C, MLA_D_ROPE = 40, 32, 128, 256, 32


def _mla_numbers(latents=1, rope=True, layers=MLA_LAYERS):
    return (latents * MLA_D_C + (MLA_D_ROPE if rope else 0)) * layers


def _mha_numbers(keys_and_values=2, layers=MLA_LAYERS):
    return keys_and_values * MLA_HEADS * MLA_D_HEAD * layers


MLA_CACHE = Exercise(
    id="mla_cache",
    lesson=LESSON,
    kind="tuple",
    answer="(mla, mha)",
    hints=[
        "Per token and layer, multi-head latent attention caches d_c + d_rope numbers; "
        "multi-head attention caches 2 n_heads d_head. Then multiply by the layers.",
        "Read d_c, d_rope, n_heads, d_head and the number of layers from the exercise "
        "text; multi-head attention's 2 counts a key and a value.",
    ],
    solution=lambda: (
        f"mla = {_mla_numbers()}  # (256 + 32) * 40\nmha = {_mha_numbers()}  # 2 * 32 * 128 * 40"
    ),
    expected=(_mla_numbers(), _mha_numbers()),
    mistakes={
        0: {
            "mla_no_rope": _mla_numbers(rope=False),
            "mla_latent_twice": _mla_numbers(latents=2),
            "cache_one_layer": _mla_numbers(layers=1),
        },
        1: {
            "kv_cache_no_two": _mha_numbers(keys_and_values=1),
            "cache_one_layer": _mha_numbers(layers=1),
        },
    },
    names=("mla", "mha"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    MLA_BY_HAND,
    MLA_ABSORBED_SCORES,
    MLA_CACHE,
)
