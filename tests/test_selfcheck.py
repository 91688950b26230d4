"""The self-check engine: every required checker accepts the reference answer and names
each mistake; whatever a learner passes gives one line and never a traceback."""

import importlib
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnlib import example as ex
from attnlib import selfcheck
from attnlib.checkers import formula, lesson_01, lesson_02, lesson_03
from attnlib.core import attention_weights, project, qk_scores, scale_scores, softmax
from attnlib.selfcheck import Feedback, check, hint, registry, solution
from attnlib.selfcheck.exercise import Exercise
from attnlib.selfcheck.run import call_cases
from tests.checker_cases import naive_softmax, softmax_rows

Q, K, V = project(ex.X, ex.W_Q), project(ex.X, ex.W_K), project(ex.X, ex.W_V)
S = qk_scores(Q, K)
A = attention_weights(Q, K)
d_k = ex.d_k


def learner_attention(Q, K, V):
    return softmax_rows(Q @ K.T / np.sqrt(K.shape[-1])) @ V


REFERENCE = {
    "qkv": (Q, K, V),
    "scores": S,
    "scaled_scores": S / np.sqrt(d_k),
    "weights": A,
    "output": A @ V,
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
    "scores_loop": lambda Q, K: Q @ K.T,
    "double_keys": "doubled",
}


def test_the_registry_holds_the_required_ids():
    exercises = registry.exercises()
    for exercise_id in ("qkv", "scores", "scaled_scores", "weights", "output", "softmax"):
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
        ("scores", S.tolist()),  # a list is fine
        ("scores", S.astype(int)),  # so are integers
        ("scaled_scores", ex.DOCUMENT["scaled_scores"].values),  # rounded by hand to 2 decimals
        ("output", ex.DOCUMENT["output"].values),
        ("weights", np.round(A, 3)),
        ("x_shape", [7, 6]),
        ("double_keys", " Doubled"),
    ],
)
def test_checker_accepts_equivalent_forms(exercise_id, answer):
    assert check(exercise_id, answer, quiet=True).passed


ARRAY_MISTAKES = [
    ("qkv", (K, Q, V), "swapped_qk"),
    ("qkv", (Q.T, K, V), "tokens_as_columns"),  # lesson 02: a projection, not the scores
    ("qkv", (Q, K, V.T), "tokens_as_columns"),
    ("scores", S.T, "transposed"),
    ("scaled_scores", S, "unscaled"),
    ("scaled_scores", S / d_k, "divided_by_d_k"),
    ("scaled_scores", S * np.sqrt(d_k), "multiplied"),
    ("scaled_scores", S.T / np.sqrt(d_k), "transposed"),
    ("weights", softmax(S), "unscaled"),
    ("weights", softmax(S / d_k), "divided_by_d_k"),
    ("weights", softmax(S * np.sqrt(d_k)), "multiplied"),
    ("weights", softmax(S / np.sqrt(d_k), axis=0), "wrong_axis"),
    ("weights", A.T, "transposed"),
    ("weights", softmax(S.T / np.sqrt(d_k)), "transposed"),
    ("output", softmax(S) @ V, "unscaled"),
    ("output", softmax(S / d_k) @ V, "divided_by_d_k"),
    ("output", softmax(S * np.sqrt(d_k)) @ V, "multiplied"),
    ("output", softmax(S / np.sqrt(d_k), axis=0) @ V, "wrong_axis"),
    ("output", A.T @ V, "transposed"),
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
]


@pytest.mark.parametrize("exercise_id, function, code", FUNCTION_MISTAKES)
def test_function_checker_names_the_mistake(exercise_id, function, code):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the learner's overflow warnings must not leak out
        feedback = check(exercise_id, function, quiet=True)
    assert (feedback.status, feedback.mistake) == ("wrong", code)


def test_the_broken_functions_in_the_notebooks_are_recognised():
    def queries_keys_values_broken(X, W_Q, W_K, W_V):  # as in exercise 02.4
        return X @ W_K, X @ W_Q, W_V.T @ X.T

    assert check("qkv_fn", queries_keys_values_broken, quiet=True).mistake == "swapped_qk"


def test_any_other_wrong_answer_shows_the_first_wrong_entry(capsys):
    answer = S.copy()
    answer[2, 2] = 8
    feedback = check("scores", answer)
    assert (feedback.passed, feedback.mistake) == (False, None)
    assert (
        capsys.readouterr().out == "✗ scores: wrong: your answer: entry [2, 2] is 8, expected 7.\n"
    )


def test_hand_rounding_is_accepted_only_within_one_unit_of_the_last_decimal():
    answer = np.round(S / np.sqrt(d_k), 2)
    answer[0, 1] += 0.02
    feedback = check("scaled_scores", answer, quiet=True)
    assert feedback.mistake is None
    assert "entry [0, 1] is 6.38, expected 6.364 (to 2 decimals)" in feedback.message


def test_wrong_function_says_which_input_and_entry():
    feedback = check("attention", lambda Q, K, V: 0 * learner_attention(Q, K, V), quiet=True)
    assert feedback.mistake is None
    assert "on inputs Q (3, 4), K (5, 4), V (5, 2)" in feedback.message


@pytest.mark.parametrize(
    "answer, says",
    [
        ("S", "is a str"),
        ({}, "is a dict"),
        ([[1, 2], [3]], "not a grid of numbers"),
        ([["a", "b", "c"]] * 3, "not a grid of numbers"),
        (S + 1j, "complex"),
        (S[:2], r"shape \(2, 3\), expected \(3, 3\)"),
        (S.ravel(), r"shape \(9,\), expected \(3, 3\)"),
        (np.full((3, 3), np.nan), "expected a finite number"),
        (len, "is a function"),
    ],
)
def test_odd_answers_give_one_clear_line(answer, says, capsys):
    feedback = check("scores", answer)
    assert (feedback.passed, feedback.status) == (False, "wrong")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("✗ scores: wrong: ")
    assert pytest.importorskip("re").search(says, feedback.message)


@pytest.mark.parametrize("answer", [..., None, (..., ..., ...), (Q, ..., V), [[3, 9, ...]]])
def test_placeholders_are_not_attempted(answer, capsys):
    exercise_id = "qkv" if isinstance(answer, tuple) else "scores"
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
        (lambda Q, K, V: Q, "wrong", r"shape \(3, 4\) .* expected \(3, 2\)"),
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
    feedback = check("score", S)
    assert feedback.status == "error" and "did you mean 'scores'?" in feedback.message
    assert check("scores").message == (
        "✗ scores: error: pass your answer too: check('scores', your_answer)."
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
    monkeypatch.setattr(lesson_04, "EXERCISES", (*original, formula.SCORES))
    with pytest.raises(ValueError, match="'scores' is listed in attnlib.checkers.lesson_04"):
        registry.exercises()
    registry._build.cache_clear()
    copy = Exercise(**{**formula.SCORES.__dict__, "lesson": "04_scaling"})
    monkeypatch.setattr(lesson_04, "EXERCISES", (*original, copy))
    with pytest.raises(ValueError, match="exercise id 'scores' is listed twice"):
        registry.exercises()
    with pytest.raises(ValueError, match="unknown mistake code 'nope'"):
        selfcheck.judge.wrong("x", mistake="nope")


def test_a_file_dropped_into_the_checkers_folder_is_never_read(scratch_registry, tmp_path):
    import attnlib.checkers

    folder = Path(attnlib.checkers.__path__[0])
    planted = folder / "zz_planted_by_a_test.py"
    planted.write_text("raise SystemExit('read')\n", encoding="utf-8")
    try:
        assert check("scores", S.T, quiet=True).mistake == "transposed"
        modules = [
            importlib.import_module(f"attnlib.checkers.lesson_{s[:2]}") for s in registry.LESSONS
        ]
        assert len(registry.exercises()) == sum(len(m.EXERCISES) for m in modules)
    finally:
        planted.unlink()


def test_hint_gives_one_more_hint_per_call(scratch_registry, capsys):
    n = len(registry.get("weights").hints)
    for k in range(1, n + 2):
        hint("weights")
        out = capsys.readouterr().out
        assert out.startswith(f"hint {min(k, n)} of {n} for weights: ")
    assert "solution('weights') shows the answer" in out
    hint("nope")
    assert capsys.readouterr().out == "hint: no exercise is called 'nope'\n"


def test_solution_shows_the_reference(capsys):
    solution("scores")
    out = capsys.readouterr().out
    assert out.startswith("solution for scores:\nS = Q @ K.T\n")
    assert "[6. 8. 7.]" in out


def test_feedback_carries_a_machine_readable_record():
    feedback = check("scores", S.T, quiet=True)
    assert isinstance(feedback, Feedback)
    assert feedback.record() == {
        "exercise": "scores",
        "status": "wrong",
        "mistake": "transposed",
        "message": feedback.message,
    }


def test_expected_answers_come_from_attnlib_core():
    np.testing.assert_allclose(formula.S, qk_scores(Q, K))
    np.testing.assert_allclose(formula.OUTPUT, attention_weights(Q, K) @ V)
    np.testing.assert_allclose(
        scale_scores(formula.S, d_k), ex.DOCUMENT["scaled_scores"].values, atol=0.005
    )
    np.testing.assert_allclose(lesson_02.Q, Q)
    np.testing.assert_array_equal(lesson_01.VECTORS["eat"], ex.X[1])


# The names each exercise notebook defines before the cell that checks the id (exercises
# 03-06), and the name the answer goes in.
EXERCISE_NAMESPACE = {
    "scores": ({"Q": Q, "K": K}, "S"),
    "scaled_scores": ({"S": S, "d_k": d_k}, "scaled_scores"),
    # exercise 05 has scaled_scores and the learner's own softmax(x), which takes no axis
    "weights": ({"scaled_scores": scale_scores(S, d_k), "softmax": softmax_rows}, "weights"),
    "output": ({"weights": A, "V": V}, "output"),
}


@pytest.mark.parametrize("exercise_id", sorted(EXERCISE_NAMESPACE))
def test_solution_code_runs_in_its_exercise_and_passes(exercise_id, capsys):
    # a learner may paste the shown solution into the exercise cell: it must run there
    names, answer_name = EXERCISE_NAMESPACE[exercise_id]
    solution(exercise_id)
    lines = capsys.readouterr().out.splitlines()[1:]  # after "solution for <id>:"
    code = "\n".join(line for line in lines if not line.lstrip().startswith("["))  # no arrays
    namespace = {"np": np, **names}
    exec(code, namespace)
    assert check(exercise_id, namespace[answer_name], quiet=True).passed
