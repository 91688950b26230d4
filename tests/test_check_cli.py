"""`attnlib check`: runs notebooks in a fresh kernel without touching them and reports
every exercise as passed / wrong: <mistake> / not attempted / error."""

import hashlib
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from attnlib.cli import CHECK_CALL, main
from attnlib.selfcheck import METADATA_KEY

ROOT = Path(__file__).resolve().parent.parent
SETUP = "import numpy as np\nfrom attnlib import example as ex\nfrom attnlib.selfcheck import check"
Q = "Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K"


def write_notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (SETUP, Q, *sources)]
    nbformat.write(nb, path)
    return path


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A handed-in notebook with one exercise in every state."""
    return write_notebook(
        tmp_path_factory.mktemp("student") / "03_scoring.ipynb",
        'check("scores", Q @ K.T)',  # passed
        'check("scaled_scores", Q @ K.T)',  # wrong: unscaled
        'check("weights", np.zeros((3, 3)))',  # wrong, no named mistake
        'check("output", ...)',  # not attempted
        'def attention(Q, K, V):\n    return 1 / 0\n\n\ncheck("attention", attention)',  # error
        'S = undefined_name\ncheck("qkv", S)',  # the cell raises before its check
        "print(also_undefined)",  # a cell error outside any check
    )


def test_check_prints_a_table_and_a_summary_and_leaves_the_file_alone(mixed, capsys):
    before = digest(mixed)
    assert main(["check", str(mixed)]) == 1
    assert digest(mixed) == before  # byte-identical
    out = capsys.readouterr().out
    rows = {line.split()[1]: " ".join(line.split()[2:]) for line in out.splitlines()[2:9]}
    assert rows == {
        "scores": "passed",
        "scaled_scores": "wrong: unscaled",
        "weights": "wrong",
        "output": "not attempted",
        "attention": "error",
        "qkv": "error",
        "(cell": "9) error",
    }
    assert "attention: ✗ attention: error: your function raised ZeroDivisionError" in out
    assert "qkv: the check did not run: NameError: name 'undefined_name' is not defined" in out
    assert out.rstrip().endswith(
        "7 exercises in 1 notebook: 1 passed, 2 wrong, 1 not attempted, 3 errors"
    )


def test_check_json(mixed, capsys):
    assert main(["check", "--json", str(mixed)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["all_passed"] is False
    assert report["summary"] == {
        "passed": 1,
        "wrong": 2,
        "not attempted": 1,
        "error": 3,
        "total": 7,
    }
    by_id = {row["exercise"]: row for row in report["rows"]}
    assert by_id["scaled_scores"]["mistake"] == "unscaled"
    assert by_id["output"]["message"] == "… output: not attempted yet"


def test_check_exits_0_when_everything_passed_on_a_copied_folder(tmp_path, capsys):
    folder = tmp_path / "handed_in"
    folder.mkdir()
    write_notebook(
        folder / "a.ipynb", 'check("scores", Q @ K.T)', 'check("qkv", (Q, K, ex.X @ ex.W_V))'
    )
    (folder / "notes.txt").write_text("not a notebook")
    assert main(["check", str(folder)]) == 0
    assert "2 exercises in 1 notebook: 2 passed" in capsys.readouterr().out


def test_check_needs_notebooks(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert "no notebooks found" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="is not a notebook or a folder of notebooks"):
        main(["check", str(tmp_path / "missing.ipynb")])


def test_a_real_solution_notebook_passes_from_a_copy(tmp_path, capsys):
    copy = shutil.copy(ROOT / "solutions" / "01_words_to_vectors.ipynb", tmp_path)
    assert main(["check", str(copy)]) == 0
    assert "4 exercises in 1 notebook: 4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "solution", sorted((ROOT / "solutions").glob("*.ipynb")), ids=lambda p: p.name
)
def test_every_stored_solution_check_passed(solution):
    # nbval proves the stored outputs are what a fresh run gives; here every check in them
    # must have passed, and every check(...) call must have left its record
    nb = nbformat.read(solution, as_version=4)
    called = {
        m.group(2) for c in nb.cells if c.cell_type == "code" for m in CHECK_CALL.finditer(c.source)
    }
    records = [
        out["metadata"][METADATA_KEY]
        for c in nb.cells
        if c.cell_type == "code"
        for out in c.outputs
        if METADATA_KEY in out.get("metadata", {})
    ]
    assert {r["exercise"] for r in records} == called
    assert [r["message"] for r in records if r["status"] != "passed"] == []


def test_in_a_kernel_the_line_shows_once_and_carries_its_record(tmp_path):
    from attnlib.cli import run_notebook

    path = write_notebook(
        tmp_path / "display.ipynb",
        'fb = check("scores", Q @ K.T)\nfb',  # check displays; the returned Feedback does not
        "fb",  # shown again in a later cell, as plain text only
        'check("scores", K @ Q.T).mistake',
    )
    cells = run_notebook(path, timeout=60).cells
    first, again, third = (c.outputs for c in cells[2:5])
    assert [o.data["text/plain"] for o in first] == ["✓ scores: correct."]
    assert first[0].metadata[METADATA_KEY]["status"] == "passed"
    assert [o.data["text/plain"] for o in again] == ["✓ scores: correct."]
    assert METADATA_KEY not in again[0].metadata
    assert [o.data["text/plain"] for o in third][1] == "'transposed'"


def test_a_class_gets_one_summary_line_per_student_folder(tmp_path, capsys):
    for student, answer in (("alice", "Q @ K.T"), ("bob", "K @ Q.T")):
        (tmp_path / student).mkdir()
        write_notebook(tmp_path / student / "03_scoring.ipynb", f'check("scores", {answer})')
    assert main(["check", str(tmp_path / "alice"), str(tmp_path / "bob")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"{tmp_path / 'alice'}: 1 of 1 exercise passed in 1 notebook " in lines[-3]
    assert f"{tmp_path / 'bob'}: 0 of 1 exercise passed in 1 notebook " in lines[-2]
    assert lines[-2].endswith("(0 passed, 1 wrong, 0 not attempted, 0 errors)")
    assert lines[-1] == "2 exercises in 2 notebooks: 1 passed, 1 wrong, 0 not attempted, 0 errors"
    assert main(["check", "--json", str(tmp_path / "alice"), str(tmp_path / "bob")]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["by_folder"][str(tmp_path / "bob")]["wrong"] == 1
    assert report["by_folder"][str(tmp_path / "alice")]["passed"] == 1
