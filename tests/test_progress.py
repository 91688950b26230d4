"""`make progress` (``attnlib progress``): what a learner reads (issue 19, item 6)."""

import io

from attnlib.cli import build_parser, print_progress
from attnlib.grade import LIMIT_NAMES, build_report, row
from attnlib.selfcheck.mistakes import MISTAKES

LIMITS = dict.fromkeys(LIMIT_NAMES, 1)  # every limit the report records; values unused here


def report_of(notebooks):
    """A grader report for ``{notebook path: [(exercise, status, mistake), ...]}``."""
    results = [
        {
            "notebook": path,
            "folder": "my-work/",
            "rows": [row(path, ex, status, mistake) for ex, status, mistake in found],
            "unknown_ids": [],
            "cell_errors": [],
        }
        for path, found in notebooks.items()
    ]
    return build_report([("my-work/", list(notebooks))], results, [], LIMITS)


def printed(report):
    out = io.StringIO()
    print_progress(report, out)
    return out.getvalue()


def test_an_untouched_copy_gets_a_short_status_and_the_first_exercise():
    untouched = {
        f"my-work/0{n}_lesson.ipynb": [(f"ex_{n}_{k}", "not attempted", None) for k in range(5)]
        for n in range(1, 10)
    }
    text = printed(report_of(untouched))
    lines = text.strip().splitlines()
    assert len(lines) <= 3, text
    assert "45 exercises in 9 notebooks" in text
    assert lines[-1] == "next: exercise ex_1_0 in my-work/01_lesson.ipynb"


def test_one_summary_mistakes_in_words_and_the_next_exercise():
    code = "scores_not_linear"
    text = printed(
        report_of(
            {
                "my-work/03_scoring.ipynb": [
                    ("score_eat_seeds", "passed", None),
                    ("double_keys", "wrong", code),
                ],
                "my-work/04_scaling.ipynb": [("scale", "not attempted", None)],
            }
        )
    )
    assert MISTAKES[code] in text and code not in text  # the hint, never the code
    assert text.count("exercises passed") == 1, text  # one summary, not one per folder too
    assert "1 of 3 exercises passed." in text
    assert "my-work/03_scoring.ipynb  1 of 2 passed" in text
    assert "my-work/04_scaling.ipynb  not started" in text
    assert text.strip().splitlines()[-1] == (
        "next: exercise double_keys in my-work/03_scoring.ipynb"
    )


def test_every_exercise_passed_says_so():
    text = printed(report_of({"my-work/01_a.ipynb": [("a", "passed", None)]}))
    assert "1 of 1 exercises passed." in text and "next:" not in text
    assert "Every exercise passed" in text


def test_progress_is_a_command_and_defaults_to_the_learners_copies():
    args = build_parser().parse_args(["progress"])
    assert args.paths == [] and args.func.__name__ == "cmd_progress"


def test_names_and_messages_reach_the_terminal_escaped():
    """A folder, a notebook name or a cell's error with terminal control sequences (clear
    the screen, move the cursor, a bell) is printed as the grader's own report prints it."""
    from attnlib.grade.intake import escape

    esc = "\x1b[2J\x1b[H\x07"
    name = f"my-work{esc}/03_scoring{esc}.ipynb"
    report = report_of({name: [("double_keys", "error", None)]})
    report["rows"][0]["message"] = f"cell 4 raised ValueError: {esc}"
    report["cell_errors"] = {name: [[4, f"ValueError: {esc}"]]}
    text = printed(report)
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert escape(name) in text and escape(esc) in text
    assert text.strip().splitlines()[-1] == f"next: exercise double_keys in {escape(name)}"
