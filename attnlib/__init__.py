"""attnlib: the helper package of the attention course.

The core steps of softmax(Q K^T / sqrt(d_k)) V, in numpy only. The submodules
``symbolic`` (sympy), ``plot`` (matplotlib), ``widgets`` (ipywidgets) and
``selfcheck`` load their dependency only when imported, so ``import attnlib``
stays as light as numpy.
"""

from . import example
from .block import (
    init_block,
    layer_norm,
    layer_norm_backward,
    mlp,
    mlp_backward,
    transformer_block,
)
from .blocked import blocked_attention, online_softmax
from .cache import KVCache, RingKVCache
from .core import attention, attention_weights, project, qk_scores, scale_scores, softmax
from .flash import flash_attention, flash_attention_backward
from .grad import (
    attention_backward,
    central_difference,
    multi_head_attention_backward,
    relative_error,
    self_attention_backward,
    softmax_jacobian,
)
from .heads import merge_heads, multi_head_attention, split_heads
from .masks import additive_mask, causal_mask, padding_mask, sliding_window_mask
from .positions import sinusoidal_positions
from .rotary import apply_rotary, rotary_angles

__all__ = [
    "KVCache",
    "RingKVCache",
    "additive_mask",
    "apply_rotary",
    "attention",
    "attention_backward",
    "attention_weights",
    "blocked_attention",
    "causal_mask",
    "central_difference",
    "example",
    "flash_attention",
    "flash_attention_backward",
    "init_block",
    "layer_norm",
    "layer_norm_backward",
    "merge_heads",
    "mlp",
    "mlp_backward",
    "multi_head_attention",
    "multi_head_attention_backward",
    "online_softmax",
    "padding_mask",
    "project",
    "qk_scores",
    "relative_error",
    "rotary_angles",
    "scale_scores",
    "self_attention_backward",
    "sinusoidal_positions",
    "sliding_window_mask",
    "softmax",
    "softmax_jacobian",
    "split_heads",
    "transformer_block",
]
__version__ = "0.1.0"
