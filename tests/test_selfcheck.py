"""The self-check engine: every required checker accepts the reference answer and names
each mistake; whatever a learner passes gives one line and never a traceback."""

import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnlib import example as ex
from attnlib import selfcheck
from attnlib.checkers import formula, lesson_01, lesson_02, lesson_03
from attnlib.core import attention_weights, project, qk_scores, softmax
from attnlib.selfcheck import Feedback, check, hint, registry, solution
from attnlib.selfcheck.exercise import Exercise
from attnlib.selfcheck.run import call_cases
from tests.checker_cases import naive_softmax, softmax_rows

Q, K, V = project(ex.X, ex.W_Q), project(ex.X, ex.W_K), project(ex.X, ex.W_V)
S = qk_scores(Q, K)
A = attention_weights(Q, K)
d_k = ex.d_k


with np.errstate(over="ignore", invalid="ignore"):  # exp(11.5) overflows float16
    NAIVE_FLOAT16 = naive_softmax(
        np.float16([[11.5, 9, 10, 8.5], [3, 12, 11.25, 0.5], [1000, 998, 250, 1001]])
    )


def learner_attention(Q, K, V):
    return softmax_rows(Q @ K.T / np.sqrt(K.shape[-1])) @ V


REFERENCE = {
    "softmax": softmax_rows,
    "attention": learner_attention,
    # lessons 01-03
    "x_matrix": ex.X,
    "x_shape": (7, 6),
    "feature_column": ex.X[:, 2],
    "embed": lambda tokens, table: np.array([table[t] for t in tokens]),
    "q_seeds": [2, 3],
    "q_shape": (10, 64),
    "qkv_fn": lambda X, W_Q, W_K, W_V: (X @ W_Q, X @ W_K, X @ W_V),
    "score_eat_seeds": 5,
    "scores_loop": lambda Q, K: np.array(
        [[sum(q[m] * k[m] for m in range(len(q))) for k in K] for q in Q], dtype=float
    ),  # a loop over the products
    "double_keys": "doubled",
}


def test_the_registry_holds_the_required_ids():
    exercises = registry.exercises()
    for exercise_id in ("softmax", "attention"):
        assert exercise_id in exercises
    assert exercises["attention"] is formula.ATTENTION
    assert exercises["attention"].lesson == "07_the_whole_formula"


@pytest.mark.parametrize("exercise_id", sorted(REFERENCE))
def test_checker_accepts_the_reference_answer(exercise_id, capsys):
    feedback = check(exercise_id, REFERENCE[exercise_id])
    assert (feedback.passed, feedback.status, feedback.mistake) == (True, "passed", None)
    assert capsys.readouterr().out == f"✓ {exercise_id}: correct.\n"


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("x_matrix", ex.X.tolist()),  # a list is fine
        ("x_matrix", ex.X.astype(int)),  # so are integers
        ("rank_witness", [-0.5, -0.5, 1]),
        ("blend_value_change", np.round(np.outer(A[:, 1], [2, 10]), 2)),  # rounded by hand
        ("x_shape", [7, 6]),
        ("double_keys", " Doubled"),
    ],
)
def test_checker_accepts_equivalent_forms(exercise_id, answer):
    assert check(exercise_id, answer, quiet=True).passed


ARRAY_MISTAKES = [
    # lessons 01-03
    ("x_matrix", ex.X.T, "tokens_as_columns"),
    ("x_matrix", ex.X[[2, 1, 0]], None),
    ("x_matrix", ex.X[[1, 0, 2]], "rows_out_of_order"),
    ("x_shape", (6, 7), "tokens_as_columns"),
    ("feature_column", ex.X[2], "row_not_column"),
    ("feature_column", ex.X[:, 3], "off_by_one"),
    ("q_seeds", K[2], "swapped_qk"),
    ("q_seeds", V[2], "used_w_v"),
    ("q_shape", (10, 512), "kept_d_model"),
    ("q_shape", (64, 10), "tokens_as_columns"),
    ("score_eat_seeds", S[2, 1], "transposed"),
    ("double_keys", "quadrupled", "scores_not_linear"),
    # the transfer tasks of lessons 01-06, answered the way a learner slips
    ("rank_witness", [0, 0, 0], "trivial_witness"),
    ("rank_witness", [-2 / 3, -1 / 6, 1], "witness_keys_as_columns"),  # solve(K[:2], -K[2])
    ("rank_witness", [-4 / 7, -5 / 7, 1], None),  # z^T S = 0: the rows, not the columns
    (
        "float16_weights",
        NAIVE_FLOAT16,
        "overflow",
    ),
    ("softmax_predict_key_shift", "unchanged", "shift_per_row"),
    ("blend_find_weights", np.linalg.lstsq(V.T, [2.2, 3.2], rcond=None)[0], "weights_sum_to_one"),
    ("blend_value_change", np.outer(A[1], [2, 10]), "transposed"),
    ("blend_value_change", [[2, 10]] * 3, "delta_not_weighted"),
]


@pytest.mark.parametrize("exercise_id, answer, code", ARRAY_MISTAKES)
def test_checker_names_the_mistake(exercise_id, answer, code, capsys):
    feedback = check(exercise_id, answer)
    assert not feedback.passed and feedback.status == "wrong"
    assert feedback.mistake == code
    line = capsys.readouterr().out
    assert line.count("\n") == 1
    if code is not None:
        assert line == f"✗ {exercise_id}: wrong ({code}): {selfcheck.MISTAKES[code]}\n"


def test_wrong_d_is_named_where_d_model_differs_from_d_k():
    # the worked example has sqrt(d_model) = d_k, so wrong_d shows on the function exercise
    def scaled_by_d_v(Q, K, V):
        return softmax_rows(Q @ K.T / np.sqrt(V.shape[-1])) @ V

    assert check("attention", scaled_by_d_v, quiet=True).mistake == "wrong_d"


def column_softmax(x):
    return np.exp(x) / np.exp(x).sum(axis=0, keepdims=True)


def mixed_axis_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=0)


def no_keepdims_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)  # runs only when the scores are square, and wrongly


def global_max_softmax(x):
    e = np.exp(x - x.max())  # one shift for the whole table
    return e / e.sum(axis=-1, keepdims=True)


FUNCTION_MISTAKES = [
    ("softmax", naive_softmax, "overflow"),
    ("softmax", no_keepdims_softmax, "no_keepdims"),
    ("softmax", global_max_softmax, "global_max"),
    ("softmax", column_softmax, "wrong_axis"),
    ("softmax", mixed_axis_softmax, "wrong_axis"),
    ("attention", lambda Q, K, V: softmax_rows(Q @ K.T) @ V, "unscaled"),
    ("attention", lambda Q, K, V: softmax_rows(Q @ K.T / K.shape[1]) @ V, "divided_by_d_k"),
    (
        "attention",
        lambda Q, K, V: softmax_rows(Q @ K.T * np.sqrt(K.shape[1])) @ V,
        "multiplied",
    ),
    (
        "attention",
        lambda Q, K, V: softmax(Q @ K.T / np.sqrt(K.shape[1]), axis=0) @ V,
        "wrong_axis",
    ),
    ("attention", lambda Q, K, V: softmax_rows(K @ Q.T / np.sqrt(K.shape[1])) @ V, "transposed"),
    (
        "attention",
        lambda Q, K, V: softmax_rows(Q @ K.T / np.sqrt(K.shape[1])).T @ V,
        "transposed",
    ),
    ("attention", lambda Q, K, V: naive_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, "overflow"),
    # lessons 01-03
    ("embed", lambda tokens, table: np.array([table[t] for t in tokens]).T, "tokens_as_columns"),
    ("embed", lambda tokens, table: np.array(list(table.values())), "rows_out_of_order"),
    ("qkv_fn", lambda X, W_Q, W_K, W_V: (X @ W_K, X @ W_Q, X @ W_V), "swapped_qk"),
    ("qkv_fn", lambda X, W_Q, W_K, W_V: (X @ W_Q, X @ W_K, W_V.T @ X.T), "tokens_as_columns"),
    ("scores_loop", lesson_03._scores_loop_bug, "loop_index"),
    ("scores_loop", lambda Q, K: K @ Q.T, "transposed"),
    # the transfer tasks of lessons 01-06
    ("one_hot", lambda tokens, vocab: np.eye(len(tokens), len(vocab)), "one_hot_position"),
    ("rank_witness_general", lambda K: np.zeros(len(K)), "trivial_witness"),
    (
        "rank_witness_general",
        lambda K: np.append(np.linalg.solve(K[:-1], -K[-1]), 1),
        "witness_keys_as_columns",
    ),
    ("query_key_matrix", lambda W_Q, W_K: W_K @ W_Q.T, "transposed"),
    ("query_key_matrix", lambda W_Q, W_K: W_Q.T @ W_K, "qk_gram_dk"),
    (
        "scaled_scores_batched",
        lambda Q, K: Q @ np.swapaxes(K, -1, -2) / np.sqrt(len(Q)),
        "batch_width",
    ),
    (
        "scaled_scores_batched",
        lambda Q, K: Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[1]),
        "counted_tokens",
    ),
]


@pytest.mark.parametrize("exercise_id, function, code", FUNCTION_MISTAKES)
def test_function_checker_names_the_mistake(exercise_id, function, code):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the learner's overflow warnings must not leak out
        feedback = check(exercise_id, function, quiet=True)
    assert (feedback.status, feedback.mistake) == ("wrong", code)


def test_the_broken_functions_in_the_notebooks_are_recognised():
    def queries_keys_values_broken(X, W_Q, W_K, W_V):  # as in exercise 02.4
        return X @ W_K, X @ W_Q, X @ W_V

    assert check("qkv_fn", queries_keys_values_broken, quiet=True).mistake == "swapped_qk"


def test_any_other_wrong_answer_says_where_it_differs_and_gives_the_first_hint(capsys):
    answer = ex.X.copy()
    answer[2, 2] = 8
    feedback = check("x_matrix", answer)
    assert (feedback.passed, feedback.mistake) == (False, None)
    first_hint = registry.get("x_matrix").hints[0]
    said = capsys.readouterr().out
    assert said == f"✗ x_matrix: wrong: X: row 2, column 2 differs. Hint: {first_hint}\n"


def test_hand_rounding_is_accepted_only_within_one_unit_of_the_last_decimal():
    answer = np.round(np.outer(A[:, 1], [2, 10]), 2)  # blend_value_change
    assert check("blend_value_change", answer, quiet=True).passed
    answer[0, 1] += 0.02
    feedback = check("blend_value_change", answer, quiet=True)
    assert feedback.mistake is None
    assert "change: row 0, column 1 differs (compared to 2 decimals)." in feedback.message


def test_wrong_function_says_which_input_and_entry():
    feedback = check("attention", lambda Q, K, V: 0 * learner_attention(Q, K, V), quiet=True)
    assert feedback.mistake is None
    assert "on inputs Q (4, 6), K (5, 6), V (5, 3)" in feedback.message  # the first case


@pytest.mark.parametrize(
    "answer, says",
    [
        ("S", "is a str"),
        ({}, "is a dict"),
        ([[1, 2], [3]], "not a grid of numbers"),
        ([["a", "b", "c"]] * 3, "not a grid of numbers"),
        (ex.X + 1j, "complex"),
        (ex.X[:2], r"shape \(2, 4\), expected \(3, 4\)"),
        (ex.X.ravel(), r"shape \(12,\), expected \(3, 4\)"),
        (np.full((3, 4), np.nan), "expected a finite number"),
        (len, "is a function"),
    ],
)
def test_odd_answers_give_one_clear_line(answer, says, capsys):
    feedback = check("x_matrix", answer)
    assert (feedback.passed, feedback.status) == (False, "wrong")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("✗ x_matrix: wrong: ")
    assert pytest.importorskip("re").search(says, feedback.message)


@pytest.mark.parametrize("answer", [..., None, (..., ...), (512, ...), [[1, 0, ...]]])
def test_placeholders_are_not_attempted(answer, capsys):
    exercise_id = "sqrt_variance" if isinstance(answer, tuple) else "x_matrix"  # a tuple, a value
    feedback = check(exercise_id, answer)
    assert (feedback.passed, feedback.status, feedback.mistake) == (False, "not attempted", None)
    assert capsys.readouterr().out == f"… {exercise_id}: not attempted yet\n"


def test_a_function_that_returns_the_placeholder_is_not_attempted():
    def softmax_stub(x):
        return ...

    assert check("softmax", softmax_stub, quiet=True).status == "not attempted"


def test_every_exercise_has_hints_and_a_solution_text():
    for exercise_id, entry in registry.exercises().items():
        assert entry.hints and all(isinstance(h, str) and h for h in entry.hints), exercise_id
        text = entry.solution_text()
        assert isinstance(text, str) and text, exercise_id


def raises(Q, K, V):
    raise ZeroDivisionError("my bug")


@pytest.mark.parametrize(
    "function, status, says",
    [
        (raises, "error", "your function raised ZeroDivisionError: my bug"),
        (lambda Q, K, V: "output", "wrong", "is a str"),
        (lambda Q, K, V: None, "wrong", "returned None .*`return` missing"),
        (lambda Q, K, V: (learner_attention(Q, K, V), None), "wrong", "tuple of 2"),
        (lambda Q: Q, "error", "TypeError"),
        (lambda Q, K, V: Q, "wrong", r"shape \(4, 6\) .* expected \(4, 3\)"),
    ],
)
def test_odd_functions_give_one_clear_line(function, status, says, capsys):
    feedback = check("attention", function)
    assert (feedback.passed, feedback.status) == (False, status)
    assert pytest.importorskip("re").search(says, feedback.message)
    assert capsys.readouterr().out.count("\n") == 1


def test_prints_inside_the_learners_function_are_swallowed(capsys):
    def chatty(x):
        print("debugging", x.shape)
        return softmax_rows(x)

    assert check("softmax", chatty).passed
    assert capsys.readouterr().out == "✓ softmax: correct.\n"


def test_a_function_that_never_returns_is_stopped(monkeypatch):
    monkeypatch.setattr(selfcheck, "TIME_LIMIT", 0.2)

    def endless(x):
        while True:
            pass

    feedback = check("softmax", endless, quiet=True)
    assert feedback.status == "error"
    assert "ran longer than 0.2 s" in feedback.message


def test_time_limit_also_works_outside_the_main_thread():
    box = {}

    def endless():
        while True:
            pass

    def run():
        box["result"] = call_cases(endless, [()], seconds=0.2)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    assert box["result"] == [{"timeout": 0.2}]
    assert call_cases(lambda: 3, [()]) == [{"ok": 3}]


def test_unknown_id_and_missing_answer_are_one_line_errors(capsys):
    feedback = check("x_matric", ex.X)
    assert feedback.status == "error" and "did you mean 'x_matrix'?" in feedback.message
    assert check("x_matrix").message == (
        "✗ x_matrix: error: pass your answer too: check('x_matrix', your_answer)."
    )
    assert capsys.readouterr().out.count("\n") == 2


@pytest.fixture
def scratch_registry(monkeypatch):
    """A registry built afresh, and hint counters, that a test may change freely."""
    monkeypatch.setattr(selfcheck, "_HINTS_GIVEN", {})
    registry._build.cache_clear()
    yield
    registry._build.cache_clear()


def test_a_broken_checker_is_reported_in_one_line_and_never_blames_the_learner():
    def broken(answer):
        return {}["missing"]

    exercise = Exercise(
        id="broken_one", lesson="01_words_to_vectors", kind="value", answer="x",
        hints=("h",), solution="s", expected=1.0, rule=broken,
    )  # fmt: skip
    feedback = exercise.judge(1.0)
    assert feedback.status == "error"
    assert "the checker failed (KeyError: 'missing'); please report this" in feedback.message


def test_duplicate_ids_and_foreign_exercises_are_refused(scratch_registry, monkeypatch):
    from attnlib.checkers import lesson_04

    original = lesson_04.EXERCISES
    monkeypatch.setattr(lesson_04, "EXERCISES", (*original, lesson_03.RANK_WITNESS))
    with pytest.raises(ValueError, match="'rank_witness' is listed in attnlib.checkers.lesson_04"):
        registry.exercises()
    registry._build.cache_clear()
    copy = Exercise(**{**lesson_03.RANK_WITNESS.__dict__, "lesson": "04_scaling"})
    monkeypatch.setattr(lesson_04, "EXERCISES", (*original, copy))
    with pytest.raises(ValueError, match="exercise id 'rank_witness' is listed twice"):
        registry.exercises()
    with pytest.raises(ValueError, match="unknown mistake code 'nope'"):
        selfcheck.judge.wrong("x", mistake="nope")


def test_a_file_dropped_into_the_checkers_folder_is_never_read(scratch_registry, tmp_path):
    import attnlib.checkers

    folder = Path(attnlib.checkers.__path__[0])
    listed = list(registry.exercises())  # the lessons' exercises, before the file is planted
    registry._build.cache_clear()
    planted = folder / "zz_planted_by_a_test.py"
    planted.write_text("raise SystemExit('read')\n", encoding="utf-8")
    try:
        assert check("x_matrix", ex.X.T, quiet=True).mistake == "tokens_as_columns"
        assert list(registry.exercises()) == listed
    finally:
        planted.unlink()


def test_hint_gives_one_more_hint_per_call(scratch_registry, capsys):
    n = len(registry.get("float16_weights").hints)
    for k in range(1, n + 2):
        hint("float16_weights")
        out = capsys.readouterr().out
        assert out.startswith(f"hint {min(k, n)} of {n} for float16_weights: ")
    assert "solution('float16_weights') shows the answer" in out
    hint("nope")
    assert capsys.readouterr().out == "hint: no exercise is called 'nope'\n"


def test_solution_shows_the_reference(capsys):
    solution("rank_witness")
    out = capsys.readouterr().out
    assert out.startswith("solution for rank_witness:\nz = [-1 / 2, -1 / 2, 1]")
    assert "# [-0.5, -0.5, 1.0]" in out


def test_feedback_carries_a_machine_readable_record():
    feedback = check("x_matrix", ex.X.T, quiet=True)
    assert isinstance(feedback, Feedback)
    assert feedback.record() == {
        "exercise": "x_matrix",
        "status": "wrong",
        "mistake": "tokens_as_columns",
        "message": feedback.message,
    }


def test_expected_answers_come_from_attnlib_core():
    from attnlib.checkers import lesson_05, lesson_06

    np.testing.assert_allclose(formula.Q, Q)
    np.testing.assert_allclose(lesson_03.S @ lesson_03.RANK_WITNESS.expected, 0, atol=1e-12)
    np.testing.assert_allclose(lesson_06.FOUND_WEIGHTS @ V, [2.2, 3.2])
    np.testing.assert_allclose(lesson_05.SCALED, ex.DOCUMENT["scaled_scores"].values, atol=0.005)
    np.testing.assert_allclose(lesson_02.Q, Q)
    np.testing.assert_array_equal(lesson_01.VECTORS["eat"], ex.X[1])
