"""check() in the learner's own notebook cannot be hung, exited, fooled or broken by an answer.

A function answer runs in a child process killed at the time limit: an endless loop that
swallows the interrupt, one that cancels the timer, a result whose ``__array__`` never
returns, ``sys.exit`` and ``os._exit`` all become one line while the caller carries on.
``sys.stdout`` is never replaced in the caller, a masked array is refused with a message
pointing to ``mask=``, the worked example cannot be written into, and nothing a learner
passes is ever reported as "the checker failed".
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attnlib import example as ex
from attnlib import selfcheck
from attnlib.selfcheck import check, registry
from tests.checker_cases import ROOT, softmax_rows

LIMIT = 0.5  # seconds per input in these tests


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(selfcheck, "TIME_LIMIT", LIMIT)


def swallows_the_interrupt(x):
    while True:
        try:
            time.sleep(0.01)
        except:  # noqa: E722 - the learner's bare except, on purpose
            pass


def cancels_the_timer(x):
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass


class NeverArray:
    def __array__(self, dtype=None, copy=None):
        while True:
            pass


@pytest.mark.parametrize(
    "function",
    [swallows_the_interrupt, cancels_the_timer, lambda x: NeverArray()],
    ids=["bare-except-loop", "cancelled-timer", "endless-__array__"],
)
def test_no_function_answer_can_hang_check(short_limit, function):
    start = time.monotonic()
    feedback = check("softmax", function, quiet=True)
    took = time.monotonic() - start
    assert feedback.status == "error", feedback.message
    assert f"ran longer than {LIMIT:g} s on inputs x (3, 5)" in feedback.message
    assert took < LIMIT + 3  # one input's limit, then the child is killed


def test_a_value_whose_array_never_returns_cannot_hang_check(short_limit):
    feedback = check("x_matrix", NeverArray(), quiet=True)
    assert feedback.status == "wrong"
    assert f"took longer than {LIMIT:g} s to turn into numbers" in feedback.message


def children_now():
    """This process's children, as ``ps`` lists them (the ``ps`` itself among them)."""
    listed = ["ps", "-o", "pid=", "--ppid", str(os.getpid())]
    return set(subprocess.run(listed, capture_output=True, text=True).stdout.split())


def test_the_child_is_gone_after_a_timeout(short_limit):
    before = children_now()  # under pytest-xdist, other tests of this worker may have children
    check("softmax", swallows_the_interrupt, quiet=True)
    new = children_now() - before
    ps_itself = 1
    assert len(new) <= ps_itself


@pytest.mark.parametrize(
    ("function", "says"),
    [
        (lambda x: sys.exit(0), "called sys.exit(0)"),
        (lambda x: sys.exit(3), "called sys.exit(3)"),
        (lambda x: os._exit(0), "called sys.exit(0)"),
        (lambda x: exit(), "called sys.exit"),
    ],
)
def test_exit_inside_an_answer_is_reported_not_obeyed(function, says):
    feedback = check("softmax", function, quiet=True)
    assert feedback.status == "error" and says in feedback.message
    assert "check reports it instead of stopping" in feedback.message


def test_exit_inside_an_answer_leaves_a_plain_python_process_running():
    script = (
        "import sys\n"
        "from attnlib.selfcheck import check\n"
        "check('softmax', lambda x: sys.exit(0))\n"
        "print('still running')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("✗ softmax: error: your function called sys.exit(0)")
    assert lines[-1] == "still running"


def test_stdout_is_never_replaced_and_prints_do_not_leak(capsys):
    before = sys.stdout

    def chatty(x):
        print("debugging", x.shape)
        sys.stdout = None  # the learner breaks their own stdout: in the child only
        return softmax_rows(x)

    assert check("softmax", chatty).passed
    assert sys.stdout is before
    assert capsys.readouterr().out == "✓ softmax: correct.\n"


def test_stdout_is_unchanged_after_a_timeout_in_another_thread(short_limit):
    import threading

    before = sys.stdout
    worker = threading.Thread(target=check, args=("softmax", swallows_the_interrupt, True))
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    assert sys.stdout is before


def test_masked_arrays_are_refused_with_a_pointer_to_mask():
    hidden = np.ma.masked_array(ex.X, mask=np.ones_like(ex.X, dtype=bool))  # all masked
    feedback = check("x_matrix", hidden, quiet=True)
    assert feedback.status == "wrong" and "mask=" in feedback.message
    feedback = check("softmax", lambda x: np.ma.masked_invalid(softmax_rows(x)), quiet=True)
    assert feedback.status == "wrong" and "mask=" in feedback.message


def test_the_worked_example_is_read_only():
    for name in ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "OUTPUT"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(ex, name)[:, :1] *= 10
    with pytest.raises(ValueError, match="read-only"):
        ex.DOCUMENT["scores"].values[0, 0] = 0
    X = ex.X.copy()  # what a lesson does to change it
    X[:, :2] *= 10
    assert check("x_matrix", ex.X, quiet=True).passed


def test_expected_values_and_cases_are_read_only():
    with pytest.raises(ValueError, match="read-only"):
        registry.get("x_matrix").expected[0, 0] = 0
    with pytest.raises(ValueError, match="read-only"):
        registry.get("softmax").cases[0][0][0, 0] = 0


def test_a_function_that_writes_into_its_inputs_changes_nothing():
    def vandal(x):
        x[...] = 0
        return softmax_rows(x)

    assert check("softmax", vandal, quiet=True).status == "wrong"
    assert check("softmax", softmax_rows, quiet=True).passed


ODD = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
    | st.just(...)
    | st.sampled_from(
        [
            {1, 2},
            b"bytes",
            1 + 2j,
            len,
            object(),
            np.array(["a"]),
            np.array([object()]),
            np.ma.masked_array([1.0]),
            np.zeros((0, 3)),
            np.float32(1.5),
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=ODD, exercise_id=st.sampled_from(sorted(registry.exercises())))
@example(answer=[10**400, 1], exercise_id="x_matrix")  # too large for a float
@example(answer=(np.ma.masked_array([1.0]), None), exercise_id="sqrt_variance")  # a tuple
def test_no_answer_is_ever_reported_as_the_checker_failing(answer, exercise_id):
    feedback = check(exercise_id, answer, quiet=True)
    assert "checker failed" not in feedback.message
    assert feedback.status in ("wrong", "not attempted", "error")
    assert "\n" not in feedback.message


@settings(max_examples=30, deadline=None)
@given(result=ODD)
def test_no_function_result_is_ever_reported_as_the_checker_failing(result):
    feedback = check("softmax", lambda x: result, quiet=True)
    assert "checker failed" not in feedback.message
    assert "\n" not in feedback.message


RECORDS = st.lists(
    st.one_of(
        st.fixed_dictionaries({"ok": ODD}),
        st.fixed_dictionaries({"error": st.text(max_size=20)}),
        st.fixed_dictionaries({"timeout": st.floats(0, 10)}),
        st.fixed_dictionaries({"exit": st.integers(-5, 5)}),
        ODD,
    ),
    max_size=6,
)
FUNCTION_EXERCISES = [e for e in registry.exercises().values() if e.kind == "function"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=RECORDS | ODD, exercise=st.sampled_from(FUNCTION_EXERCISES))
def test_judge_never_raises_on_any_data_the_grader_may_decode(records, exercise):
    feedback = exercise.judge(records)  # the grader's path: data only, no learner code
    assert "checker failed" not in feedback.message
    assert feedback.status in ("wrong", "not attempted", "error")
    assert "\n" not in feedback.message
