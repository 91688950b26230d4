"""`attnlib check`: the table, the summaries, JSON and JSON lines, -j, exit statuses 0/1/2.

The hostile notebooks (forgeries, faults, isolation) are in tests/grader/.
"""

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from attnlib.cli import main
from tests.grader.conftest import code, solved, unsolved, write

ROOT = Path(__file__).resolve().parent.parent


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def mixed_notebook():
    """Lesson 03 with one exercise in each state: passed, wrong, not attempted, missing."""
    nb = unsolved()
    cells = nb["cells"]
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if 'check("score_eat_seeds"' in source:
            cell["source"] = (
                'score_eat_seeds = 2 * 2 + 1 * 1\ncheck("score_eat_seeds", score_eat_seeds)'
            )
        elif 'check("rank_witness"' in source:
            cell["source"] = 'z = [0, 0, 0]\ncheck("rank_witness", z)'
        elif 'check("double_keys"' in source:
            cell["source"] = "prediction = 2"  # the check line was deleted
    cells.append(code("print(undefined_name)"))  # a cell error outside any check
    return nb


@pytest.fixture(scope="session")
def mixed(tmp_path_factory):
    return write(tmp_path_factory.mktemp("student") / "03_scoring.ipynb", mixed_notebook())


def test_help_states_the_limits_defaults_and_the_container_command(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for needed in (
        "seconds one cell may run (default 30)",
        "then its whole sandbox is killed (default 180)",
        "bytes of memory per notebook (all its processes, with cgroups) and of address space per process (default 2147483648)",
        "CPU seconds per kernel process (default 300)",
        "processes and threads per notebook (cgroups) and per kernel uid (default 128)",
        "--require-sandbox",
        "seconds all cells of one notebook may run (default 120)",
        "bytes of output one notebook may print (default 16777216)",
        "notebooks graded in parallel (default: the number of cores",
        "--jsonl",
        'docker run --rm --network none -v "$PWD/wheels:/wheels:ro" -v "$PWD/handed-in:/class:ro"',
    ):
        assert needed in text


def test_the_table_the_reasons_and_the_summary_leave_the_file_alone(mixed, capsys):
    before = digest(mixed)
    assert main(["check", "-q", str(mixed)]) == 1
    assert digest(mixed) == before
    out = capsys.readouterr().out
    lines = out.splitlines()
    rows = {line.split()[1]: " ".join(line.split()[2:]) for line in lines[2:7]}
    assert rows == {
        "score_eat_seeds": "passed",
        "rank_witness": "wrong: trivial_witness",
        "rank_witness_general": "not attempted",
        "scores_loop": "not attempted",
        "double_keys": "missing",
    }
    assert f'{mixed} double_keys: no cell calls check("double_keys", ...)' in out
    assert re.search(
        f"{re.escape(str(mixed))}: cell \\d+ raised NameError: name 'undefined_name' is not defined",
        out,
    )
    assert lines[-1] == (
        "5 exercises in 1 notebook: 1 passed, 1 wrong, 2 not attempted, 1 missing, "
        "0 not reached, 0 errors"
    )


def test_json_is_the_whole_report(mixed, capsys):
    assert main(["check", "--json", "-q", str(mixed)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["all_passed"] is False
    assert report["summary"] == {
        "passed": 1,
        "wrong": 1,
        "not attempted": 2,
        "missing": 1,
        "not reached": 0,
        "error": 0,
        "total": 5,
        "notebooks": 1,
    }
    by_id = {row["exercise"]: row for row in report["rows"]}
    assert by_id["rank_witness"]["mistake"] == "trivial_witness"
    assert by_id["scores_loop"]["message"] == "… scores_loop: not attempted yet"
    assert (
        report["cell_errors"][str(mixed)][0][1] == "NameError: name 'undefined_name' is not defined"
    )
    limits = {"cell_timeout": 30.0, "budget": 120.0, "output_cap": 16 * 2**20, "wall": 180.0}
    assert report["limits"].items() >= limits.items()


def test_json_lines_one_per_notebook_then_the_summary(mixed, tmp_path, capsys):
    other = write(tmp_path / "01_words_to_vectors.ipynb", b"")
    assert main(["check", "--jsonl", str(mixed), str(other)]) == 1
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert sorted(line["notebook"] for line in lines[:2]) == sorted([str(mixed), str(other)])
    assert set(lines[-1]) >= {"summary", "by_folder", "all_passed", "tampered", "limits"}
    assert lines[-1]["summary"]["total"] == 6
    progress = captured.err.splitlines()
    assert len(progress) == 2 and all(re.match(r"\[[12]/2\] ", line) for line in progress)


@pytest.mark.parametrize("flag", [[], ["--json"], ["--jsonl"]])
def test_exit_2_when_the_grader_cannot_run_and_json_stays_json(tmp_path, capsys, flag):
    assert main(["check", *flag, str(tmp_path / "missing.ipynb")]) == 2
    captured = capsys.readouterr()
    assert "is not a notebook or a folder of notebooks" in captured.err
    if flag:
        assert json.loads(captured.out)["error"].endswith(
            "is not a notebook or a folder of notebooks."
        )


def test_an_empty_folder_gets_its_line_and_is_not_a_pass(tmp_path, capsys):
    (tmp_path / "alice").mkdir()
    assert main(["check", "-q", str(tmp_path / "alice")]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'alice'}: no notebooks to grade" in out
    assert out.rstrip().endswith(
        "0 exercises in 0 notebooks: 0 passed, 0 wrong, 0 not attempted, 0 missing, 0 not reached, 0 errors"
    )


def test_a_class_gets_one_summary_line_per_folder_and_j1_equals_j2(tmp_path, capsys):
    write(tmp_path / "alice" / "03_scoring.ipynb", solved())
    write(tmp_path / "bob" / "03_scoring.ipynb", mixed_notebook())
    (tmp_path / "bob" / "notes.txt").write_text("not a notebook, not graded")
    folders = [str(tmp_path / "alice"), str(tmp_path / "bob")]
    assert main(["check", "-q", "-j", "2", *folders]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3] == (
        f"{tmp_path / 'alice'}: 5 of 5 exercises passed in 1 notebook (5 passed, 0 wrong, "
        "0 not attempted, 0 missing, 0 not reached, 0 errors)"
    )
    assert lines[-2].startswith(f"{tmp_path / 'bob'}: 1 of 5 exercises passed in 1 notebook")
    reports = []
    for jobs in ("1", "2"):
        assert main(["check", "--json", "-q", "-j", jobs, *folders]) == 1
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0]["rows"] == reports[1]["rows"]


def test_every_solution_passes_and_the_course_folder_exits_0(tmp_path, capsys):
    copy = shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    assert main(["check", "--json", "-q", "-j", "2", str(copy)]) == 0
    report = json.loads(capsys.readouterr().out)
    from attnlib.selfcheck import registry

    assert report["summary"]["notebooks"] == len(registry.LESSONS)  # one per lesson from 01
    assert [r for r in report["rows"] if r["status"] != "passed"] == []

    assert [r["exercise"] for r in report["rows"]] == list(registry.exercises())


def test_the_unfilled_exercises_exit_1_with_every_exercise_not_attempted(tmp_path, capsys):
    copy = shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    assert main(["check", "--json", "-q", "-j", "2", str(copy)]) == 1
    report = json.loads(capsys.readouterr().out)
    from attnlib.selfcheck import registry

    assert [(r["exercise"], r["status"]) for r in report["rows"]] == [
        (i, "not attempted") for i in registry.exercises()
    ]
    assert report["cell_errors"] == {} and report["unknown_ids"] == {}


def test_a_kernel_that_did_not_start_is_started_again(tmp_path, capsys, monkeypatch):
    from attnlib.grade import notebook

    real, calls = notebook.run_in_kernel, []

    def flaky(*args):  # the first kernel loses its ports to another one, as under -j N
        calls.append(1)
        if len(calls) == 1:
            return {"answers": {}, "cell_errors": [], "stop": {"cell": -1, "reason": "start"}}
        return real(*args)

    monkeypatch.setattr(notebook, "run_in_kernel", flaky)
    path = write(tmp_path / "alice" / "03_scoring.ipynb", solved())
    assert main(["check", "--json", "-q", "-j", "1", str(path.parent)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(calls) == 2
    assert {r["status"] for r in report["rows"]} == {"passed"}
