"""How long a reader needed for each lesson and for its exercises: measured, not counted.

A reader who did not write the lesson, with school algebra and a little Python (lists,
loops, functions) and only what earlier lessons teach, worked through it in order: read
every cell, ran it, followed each table and sympy step, then answered every exercise with
``check()`` and ``hint()`` as a learner would. The minutes are what that took, lesson and
exercises apart; where the reader got stuck was fixed in the lesson (see the closing notes
of issue 16). ``tools/lesson_length.py --write`` puts these minutes into the course maps of
README.md and lesson 00 as "lesson + exercises"; a lesson not yet timed shows the
word-count estimate of that tool instead, and ``tests/test_lesson_lengths.py`` fails until
every lesson is timed.

Keys are lesson stems (the file name without number and extension), so renumbering the
course changes nothing here. Re-time a lesson after changing it by more than a fix.

>>> MEASURED["scoring"]
(30, 35)
>>> all(lesson <= ONE_SITTING for lesson, _ in MEASURED.values())
True
"""

ONE_SITTING = 35  # minutes: no lesson alone may take a reader longer

# stem: (lesson minutes, exercise minutes), timed 2026-12-02
MEASURED = {
    "start_here": (12, 0),
    "words_to_vectors": (20, 20),
    "queries_keys_values": (20, 30),
    "scoring": (30, 35),
    "scaling": (32, 25),
    "softmax": (32, 30),
    "blending_values": (18, 20),
    "the_whole_formula": (25, 25),
    # 08 split in two after a reader took 45 + 35; both halves re-timed 2026-12-05
    # why_sqrt_dk's, rotary_in_practice's and latent_attention's exercises: each notebook timed
    # whole with its new exercise (sqrt_product_of_averages, alibi_slopes_by_hand, mla_by_hand
    # and mla_absorbed_scores), 2026-12-05, by a reader who did not write them
    "why_sqrt_dk": (32, 20),
    "saturation": (30, 24),
    "masking": (33, 16),
    "masks_in_practice": (27, 15),
    # 11 and 12 re-timed 2026-12-05 after their foundations were added (11 took 40 and was trimmed)
    "attention_without_weights": (35, 22),
    "order_and_positions": (29, 23),
    # 13 split in two after a reader took 36 + 33; both halves re-timed 2026-12-05
    "rotary_positions": (29, 15),
    "rotary_in_practice": (21, 24),
    # 14 re-timed 2026-12-05 after its trim (a numpy box, a memory drawing and a fourth bug-zoo row
    # had put it near 41 minutes): the reader's minutes
    "multi_head_and_cross_attention": (35, 26),
    "transformer_block": (30, 20),
    "sliding_window_attention": (32, 35),
    # gradients, attention_backward and training_an_attention_head: changed by issue 25
    # (lesson 18 split in two; readers timed the old 16 at 46 + 36 and 17 at 39 + 25), timed
    # 2026-12-05 by a reader who did not write them, after the fixes of that reading
    # (attention_backward trimmed from about 46 minutes: bug zoo, angle detour, spread columns).
    "gradients": (26, 20),
    "attention_backward": (35, 25),
    # weight_gradients and training_an_attention_head: the two halves of the old
    # training_an_attention_head (timed 42 + 30), split after that reading; each lesson and its
    # exercises (with the new untrained_key_row) timed 2026-12-05 by a reader who did not
    # write them, after the fixes of that reading
    "weight_gradients": (30, 18),
    "training_an_attention_head": (31, 20),
    "cost_and_memory": (35, 25),  # re-timed 2026-12-05 after its trim
    "precision": (33, 22),
    "checking_against_a_framework": (32, 18),
    "decoding_with_a_kv_cache": (27, 20),
    # 22 split in two (its latent-attention half read as a second lesson), both re-timed 2026-12-05;
    # latent_attention's exercises (mla_cache and the two new ones) sit in its own notebook
    "grouped_query_attention": (24, 18),
    "latent_attention": (22, 20),
    "flash_attention": (27, 30),
    "tiny_gpt": (35, 25),  # re-timed 2026-12-05 after its ablation section and trim
}
