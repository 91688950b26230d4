"""The course's exercises, built from an explicit list of lessons.

Each lesson's exercises are the tuple ``EXERCISES`` of ``attnlib/checkers/lesson_NN.py``,
in the order of the exercise notebook's check cells. Nothing registers itself: a file
dropped into ``attnlib/checkers/`` is never read. To add a lesson, write its module and
add its notebook stem to ``LESSONS``.

>>> LESSONS[2]
'03_scoring'
>>> [e.id for e in for_notebook("03_scoring")]
['score_eat_seeds', 'rank_witness', 'rank_witness_general', 'scores_loop', 'double_keys']
>>> get("rank_witness").kind, get("no_such_id"), for_notebook("99_nothing")
('value', None, ())
"""

import functools
import importlib

LESSONS = (
    "01_words_to_vectors",
    "02_queries_keys_values",
    "03_scoring",
    "04_scaling",
    "05_softmax",
    "06_blending_values",
    "07_the_whole_formula",
    "08_why_sqrt_dk",
    "09_saturation",
    "10_masking",
    "11_masks_in_practice",
    "12_attention_without_weights",
    "13_order_and_positions",
    "14_rotary_positions",
    "15_rotary_in_practice",
    "16_multi_head_and_cross_attention",
    "17_transformer_block",
    "18_gradients",
    "19_attention_backward",
    "20_weight_gradients",
    "21_training_an_attention_head",
    "22_cost_and_memory",
    "23_precision",
    "24_checking_against_a_framework",
    "25_decoding_with_a_kv_cache",
    "26_grouped_query_attention",
    "27_latent_attention",
    "28_sliding_window_attention",
    "29_flash_attention",
    "30_tiny_gpt",
)


def _module_name(stem):
    return f"attnlib.checkers.lesson_{stem[:2]}"


@functools.cache
def _build():
    by_id, by_lesson = {}, {}
    for stem in LESSONS:
        module = importlib.import_module(_module_name(stem))
        found = tuple(module.EXERCISES)
        for exercise in found:
            if exercise.lesson != stem:
                raise ValueError(
                    f"registry: {exercise.id!r} is listed in {module.__name__} but says it "
                    f"belongs to {exercise.lesson!r}, not {stem!r}."
                )
            if exercise.id in by_id:
                raise ValueError(f"registry: exercise id {exercise.id!r} is listed twice.")
            by_id[exercise.id] = exercise
        by_lesson[stem] = found
    return by_id, by_lesson


def exercises():
    """Every exercise, id -> :class:`~attnlib.selfcheck.exercise.Exercise`, in course order."""
    return dict(_build()[0])


def for_notebook(stem):
    """The exercises of one notebook stem, in order; ``()`` for a stem that is not a lesson."""
    return _build()[1].get(stem, ())


def get(exercise_id):
    """The exercise called ``exercise_id``, or ``None``."""
    return _build()[0].get(exercise_id) if isinstance(exercise_id, str) else None
