"""The order a learner walks the course: one list of lesson stems, the only place it is kept.

A stem is a lesson's file name without its number and extension (``notebooks/03_scoring.ipynb``
has the stem ``scoring``). ``tools/renumber.py`` gives every lesson that exists the number of its
place in this list (missing stems are skipped, so numbers stay compact) and rewrites every file
name, checker module and reference to match. To add a lesson, save it under any number no other
lesson uses (``notebooks/90_rotary_positions.ipynb``), put its stem where a learner meets it, and
run ``python tools/renumber.py``.

>>> ORDER[:3]
('start_here', 'words_to_vectors', 'queries_keys_values')
"""

ORDER = (
    # part one: the worked example, one step of the formula per lesson
    "start_here",
    "words_to_vectors",
    "queries_keys_values",
    "scoring",
    "scaling",
    "softmax",
    "blending_values",
    "the_whole_formula",
    # part two: ideas before machinery
    "why_sqrt_dk",
    "saturation",
    "masking",
    "masks_in_practice",
    "attention_without_weights",
    "order_and_positions",
    "rotary_positions",
    "rotary_in_practice",
    "multi_head_and_cross_attention",
    "transformer_block",
    "gradients",
    "attention_backward",
    "weight_gradients",
    "training_an_attention_head",
    "cost_and_memory",
    "precision",
    "checking_against_a_framework",
    "decoding_with_a_kv_cache",
    "grouped_query_attention",
    "latent_attention",
    "sliding_window_attention",
    "flash_attention",
    "tiny_gpt",
)
