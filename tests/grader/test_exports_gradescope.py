"""Gradescope: the autograder zip, and run_autograder's Python entry in a simulated layout.

The published results format (NOTES.md): ``score``, ``tests`` (each ``name``, ``score``,
``max_score``, ``output``, ``visibility`` of hidden / after_due_date / after_published /
visible) and the optional ``stdout_visibility``.
"""

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest

from attnlib.grade import gradescope
from attnlib.selfcheck import registry
from tests.test_check_cli import mixed_notebook

from .conftest import write
from .test_exports import run

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
TEST_FIELDS = {"name": str, "score": float, "max_score": float, "output": str, "visibility": str}


def validate(results):
    """Assert that ``results`` is a valid Gradescope results.json; return its tests."""
    assert set(results) <= {"score", "tests", "output", "stdout_visibility", "execution_time",
                            "visibility", "extra_data", "leaderboard"}  # fmt: skip
    assert isinstance(results["score"], float)
    assert results["stdout_visibility"] in VISIBILITIES
    for test in results["tests"]:
        assert set(test) == set(TEST_FIELDS)
        for field, kind in TEST_FIELDS.items():
            assert isinstance(test[field], kind), (field, test)
        assert test["visibility"] in VISIBILITIES
        assert 0 <= test["score"] <= test["max_score"] or test["max_score"] == 0 == test["score"]
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    return results["tests"]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    status, out, err = run("gradescope", "build", folder / "autograder.zip",
                           "--lessons", "03_scoring", "05_softmax")  # fmt: skip
    assert status == 0, err
    return folder / "autograder.zip"


def test_the_zip_has_setup_and_run_autograder_at_its_root_and_the_course(built, tmp_path):
    with zipfile.ZipFile(built) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        setup, runner = zf.read("setup.sh").decode(), zf.read("run_autograder").decode()
        config = json.loads(zf.read("config.json"))
    for name in ("setup.sh", "run_autograder"):
        assert (infos[name].external_attr >> 16) & stat.S_IXUSR, name
    assert "pip install /autograder/source/course" in setup
    assert 'exec "$AUTOGRADER_ROOT/venv/bin/python" -m attnlib.grade.gradescope' in runner
    assert {"course/pyproject.toml", "course/attnlib/grade/gradescope.py",
            "course/exercises/03_scoring.ipynb"} <= set(infos)  # fmt: skip
    assert not any(name.startswith("course/solutions/") for name in infos)
    assert config == {"lessons": ["03_scoring", "05_softmax"], "points": None,
                      "visibility": "visible"}  # fmt: skip
    status, _, _ = run("gradescope", "build", tmp_path / "hidden.zip", "--lessons", "03_scoring",
                       "--visibility", "after_published")  # fmt: skip
    with zipfile.ZipFile(tmp_path / "hidden.zip") as zf:
        assert json.loads(zf.read("config.json"))["visibility"] == "after_published"
    again = tmp_path / "again.zip"
    gradescope.build(again, lessons=["03_scoring", "05_softmax"])
    assert again.read_bytes() == built.read_bytes()  # the same inputs give the same zip
    with pytest.raises(gradescope.BuildError, match=r"--lessons: \['99_nothing'\] are not"):
        gradescope.build(tmp_path / "x.zip", lessons=["99_nothing"])


def test_run_autograder_grades_the_submission_and_writes_valid_results(built, tmp_path, capsys):
    root = tmp_path / "autograder"
    gradescope.install_files(built, root)  # as Gradescope unpacks it: ROOT/source
    write(root / "submission" / "03_scoring.ipynb", mixed_notebook())
    data = gradescope.run(root)
    results = json.loads((root / "results" / "results.json").read_text())
    assert results == data
    tests = {t["name"]: t for t in validate(results)}
    expected_names = [f"{e.lesson}: {e.id}" for e in registry.exercises().values()
                      if e.lesson in ("03_scoring", "05_softmax")]  # fmt: skip
    assert list(tests) == expected_names
    assert tests["03_scoring: score_eat_seeds"]["score"] == 1.0
    wrong = tests["03_scoring: rank_witness"]
    assert wrong["score"] == 0.0 and wrong["output"].startswith("Wrong: z = 0 proves nothing")
    assert tests["05_softmax: softmax"]["output"] == "05_softmax.ipynb was not handed in."
    assert results["score"] == 1.0 and results["stdout_visibility"] == "hidden"
    assert "5 exercises in 1 notebook" in capsys.readouterr().out  # the instructor's log


def test_the_run_autograder_script_finds_notebooks_one_folder_down(built, tmp_path, monkeypatch):
    root = tmp_path / "autograder"
    gradescope.install_files(built, root)
    (root / "submission" / "my-work").mkdir(parents=True)
    monkeypatch.setenv("AUTOGRADER_ROOT", str(root))
    validate(gradescope.run())  # no notebook at all: every test 0, still valid
    write(root / "submission" / "my-work" / "03_scoring.ipynb", b"not json")
    python = root / "venv" / "bin" / "python"  # what setup.sh would have installed
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    script = root / "source" / "run_autograder"
    done = subprocess.run([str(script)], env={**os.environ, "AUTOGRADER_ROOT": str(root)},
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    tests = validate(json.loads((root / "results" / "results.json").read_text()))
    assert tests[-1]["name"] == "03_scoring.ipynb: the whole notebook"
    assert tests[-1]["output"].startswith("not gradable: the file is not valid JSON")
