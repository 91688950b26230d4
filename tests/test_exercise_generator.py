"""The generator: solutions/ is the single source and exercises/ is exactly what it makes."""

import re
from pathlib import Path

import nbformat
import pytest

from tools.generate import (
    BEGIN,
    END,
    NOTE_START,
    MarkerError,
    exercise_text,
    main,
    make_exercise,
    solution_regions,
    sources_fingerprint,
    stub_source,
    typed_into,
)

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def region(*lines, indent=""):
    return "\n".join([indent + BEGIN, *(indent + line for line in lines), indent + END])


@pytest.mark.parametrize(
    "body, stub",
    [
        (["S = Q @ K.T"], ["S = ..."]),
        (["Q = X @ W_Q", "K = X @ W_K", "Q = Q + 0"], ["Q = ...", "K = ..."]),
        (["Q, K = X @ W_Q, X @ W_K"], ["Q, K = ..., ..."]),
        (["n: int = 3"], ["n = ..."]),
        (
            ["S = np.zeros((3, 3))", "for i in range(3):", "    S[i, i] = 1.0"],
            ["S = ..."],
        ),
        (["print(1 + 1)"], ["..."]),
        (["this is not python"], ["..."]),
    ],
)
def test_top_level_region_becomes_assignment_stubs(body, stub):
    source = "x = 1\n" + region(*body) + "\ncheck('x', x)"
    assert stub_source(source) == "\n".join(["x = 1", *stub, "check('x', x)"])


def test_a_function_body_becomes_return_placeholder_at_its_indentation():
    source = "\n".join(
        [
            "def softmax(x):",
            '    """Softmax along the last axis."""',
            region(
                "z = x - x.max(axis=-1, keepdims=True)",
                "e = np.exp(z)",
                "return e / e.sum(axis=-1, keepdims=True)",
                indent="    ",
            ),
            "",
            "",
            'check("softmax", softmax)',
        ]
    )
    assert stub_source(source) == "\n".join(
        [
            "def softmax(x):",
            '    """Softmax along the last axis."""',
            "    return ...",
            "",
            "",
            'check("softmax", softmax)',
        ]
    )


def test_several_regions_in_one_cell_and_markdown_regions():
    source = region("a = 1") + "\nb = 2\n" + region("c = a + b")
    assert stub_source(source) == "a = ...\nb = 2\nc = ..."
    text = "Your prediction:\n" + region("The weights get sharper.")
    assert stub_source(text, markdown=True) == "Your prediction:\n*Your answer here.*"


@pytest.mark.parametrize(
    "source, message",
    [
        (f"{BEGIN}\nx = 1", "BEGIN SOLUTION without"),
        (f"x = 1\n{END}", "line 2: ### END SOLUTION without"),
        (f"{BEGIN}\n{BEGIN}\nx = 1\n{END}\n{END}", "line 2: ### BEGIN SOLUTION inside another"),
        (f"x = 1  {BEGIN}", "line 1: a marker must be alone on its line"),
    ],
)
def test_unbalanced_markers_are_refused(source, message):
    with pytest.raises(MarkerError, match=re.escape(message)):
        stub_source(source, where="nb.ipynb, cell 3")


def small_solution():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    cell = nbformat.v4.new_code_cell(region("S = Q @ K.T") + '\ncheck("scores", S)')
    cell.execution_count = 2
    cell.outputs = [nbformat.v4.new_output("stream", text="✓ scores: correct.\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), cell]
    return nb


def test_make_exercise_clears_outputs_and_machine_details_and_leaves_the_source_alone():
    nb = small_solution()
    ex = make_exercise(nb)
    # the title ends with the note; cells stay aligned with the solution's
    assert ex.cells[0].source.startswith("# Title (blank template)\n\n" + NOTE_START)
    assert len(ex.cells) == 2
    assert "](../my-work/notebook)" in ex.cells[0].source
    assert ex.cells[1].source == 'S = ...\ncheck("scores", S)'
    assert ex.cells[1].outputs == [] and ex.cells[1].execution_count is None
    # the solution's kernel's language_info, the kernelspec JupyterLab writes (normalize.py)
    assert ex.metadata["language_info"] == nb.metadata["language_info"]
    assert ex.metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert ex.cells[1].id == nb.cells[1].id  # stable ids: regenerating changes nothing
    assert ex.metadata["attnlib"]["generated"] == sources_fingerprint(ex.cells)
    assert nb.cells[1].outputs and BEGIN in nb.cells[1].source  # the solution is untouched


def test_the_command_writes_checks_and_reports_stale_or_orphan_exercises(tmp_path, capsys):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    nbformat.write(small_solution(), solutions / "01_demo.ipynb")
    args = ["--solutions", str(solutions), "--exercises", str(exercises)]
    assert main(["--check", *args]) == 1  # not generated yet
    assert main(args) == 0
    assert (exercises / "01_demo.ipynb").read_text() == exercise_text(solutions / "01_demo.ipynb")
    assert main(["--check", *args]) == 0
    (exercises / "01_demo.ipynb").write_text((exercises / "01_demo.ipynb").read_text() + " ")
    assert main(["--check", *args]) == 1
    assert "differs from its solution; run `make exercises`" in capsys.readouterr().out
    main(args)
    nbformat.write(small_solution(), exercises / "99_stray.ipynb")
    assert main(["--check", *args]) == 1
    assert "99_stray.ipynb: no solution notebook makes" in capsys.readouterr().out


def answer_in(path, code='S = Q @ K.T\ncheck("scores", S)'):
    """Type an answer into an exercise notebook's stub cell, as a learner would, and save."""
    nb = nbformat.read(path, as_version=4)
    stub = next(c for c in nb.cells if c.cell_type == "code" and "S = ..." in c.source)
    stub.source = code
    nbformat.write(nb, path)
    return path.read_text()


def test_make_exercises_leaves_a_notebook_with_typed_answers_alone_unless_forced(tmp_path, capsys):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    nbformat.write(small_solution(), solutions / "01_demo.ipynb")
    args = ["--solutions", str(solutions), "--exercises", str(exercises)]
    assert main(args) == 0
    target = exercises / "01_demo.ipynb"
    blank = target.read_text()
    assert not typed_into(blank)
    # outputs and metadata (a run, a JupyterLab save) are not answers: overwritten
    nb = nbformat.read(target, as_version=4)
    nb.metadata["language_info"]["version"] = "3.99.0"
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(nb, target)
    assert not typed_into(target.read_text())
    assert main(args) == 0 and target.read_text() == blank
    # typed answers: listed, left alone, and the check says how to keep them
    answered = answer_in(target)
    assert typed_into(answered)
    capsys.readouterr()
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"{target}: not overwritten" in out and f"workspace.py --adopt {target}" in out
    assert target.read_text() == answered
    assert main(["--check", *args]) == 1
    assert "answers typed into it?" in capsys.readouterr().out
    assert main(["--force", *args]) == 0
    assert target.read_text() == blank


def test_the_command_reports_bad_markers_without_a_traceback(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    nb = small_solution()
    nb.cells[1].source = BEGIN + "\nS = 1"
    nbformat.write(nb, tmp_path / "s" / "01_bad.ipynb")
    assert main(["--solutions", str(tmp_path / "s"), "--exercises", "x"]) == 2
    assert "01_bad.ipynb, cell 1: ### BEGIN SOLUTION without" in capsys.readouterr().err


def test_maintainer_tools_are_not_in_the_installed_package():
    # the learner's package holds the math, the lesson helpers, the self-check and the grader
    import attnlib
    from attnlib.cli import build_parser

    package = Path(attnlib.__file__).parent
    assert not (package / "generate.py").exists()
    assert (ROOT / "tools" / "generate.py").exists() and (ROOT / "tools" / "execute.py").exists()
    commands = build_parser()._subparsers._group_actions[0].choices
    assert sorted(commands) == ["check", "collect", "gradescope", "progress", "report"]  # no tools
    makefile = (ROOT / "Makefile").read_text()
    assert "tools/generate.py" in makefile and "tools/execute.py" in makefile


# ---- the repository's own solutions/ and exercises/ ----------------------------------------


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_exercise_notebook_is_exactly_what_the_generator_makes(solution):
    exercise = ROOT / "exercises" / solution.name
    assert exercise.exists(), f"run `make exercises`: {exercise.name} is missing"
    assert exercise.read_text(encoding="utf-8") == exercise_text(solution), (
        f"exercises/{solution.name} differs from its solution: run `make exercises`"
    )


def test_no_exercise_notebook_lacks_a_solution():
    names = {p.name for p in SOLUTIONS}
    assert [p.name for p in (ROOT / "exercises").glob("*.ipynb") if p.name not in names] == []


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_no_marker_or_solution_line_leaks_into_the_exercise(solution):
    sol = nbformat.read(solution, as_version=4)
    exercise_file = ROOT / "exercises" / solution.name
    text = exercise_file.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    # every solution line that appears nowhere else in the solution notebook is a giveaway
    outside = "\n".join(stub_source(c.source) for c in sol.cells)
    ex = nbformat.read(exercise_file, as_version=4)
    exercise_source = "\n".join(c.source for c in ex.cells)
    regions = [r for c in sol.cells for r in solution_regions(c.source)]
    assert regions, f"{solution.name} has no solution regions"
    for lines in regions:
        for line in lines:
            stripped = line.strip()
            if len(stripped) > 3 and stripped not in outside:
                assert stripped not in exercise_source, f"{solution.name} leaks: {stripped}"
    assert all(c.get("outputs", []) == [] for c in ex.cells if c.cell_type == "code")
    assert all(c.get("execution_count") is None for c in ex.cells if c.cell_type == "code")


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_every_solution_has_at_least_three_checked_exercises(solution):
    sol = nbformat.read(solution, as_version=4)
    ids = re.findall(r"""\bcheck\(\s*["'](\w+)["']""", "\n".join(c.source for c in sol.cells))
    assert len(set(ids)) >= 3, f"{solution.name} checks only {sorted(set(ids))}"
