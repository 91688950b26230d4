"""`attnlib collect`: LMS bulk downloads in, handed-in/<login>/NN_name.ipynb out; the
grader's matching of renamed notebooks; and zips that attack the collector.

A simulated Canvas download whose files Canvas and browsers renamed must grade exactly
like the same notebooks named as the course names them.
"""

import csv
import io
import json
import os
import stat
import zipfile

from attnlib.grade import collect as co
from attnlib.grade.intake import assign, lesson_of
from attnlib.selfcheck import registry
from tests.test_check_cli import mixed_notebook

from .conftest import ROOT, solved, write
from .test_exports import run


def nb_bytes(nb):
    return json.dumps(nb).encode()


def softmax_solved():
    return (ROOT / "solutions" / "05_softmax.ipynb").read_bytes()


def zip_of(path, entries):
    """A zip of ``{name: bytes}``; a value ``("link", target)`` makes a symbolic link."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            if isinstance(data, tuple):
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, data[1])
            else:
                zf.writestr(name, data)
    return path


def canvas_download(folder):
    """What Canvas's Download Submissions gives: flat files, renamed on the way."""
    return zip_of(folder / "submissions.zip", {
        "smithalice_4101_88231_03_scoring-1.ipynb": nb_bytes(solved()),
        "smithalice_4101_88240_05_softmax (1).ipynb": softmax_solved(),
        "jonesbob_late_4102_88232_03_scoring.ipynb": nb_bytes(mixed_notebook()),
        "jonesbob_late_4102_88233_notes.pdf": b"%PDF-1.4",
    })  # fmt: skip


def rows_by_student(report):
    return sorted(
        (r["notebook"].split("/")[-2], r["exercise"], r["status"], r["mistake"])
        for r in report["rows"]
    )


def test_a_canvas_download_grades_like_the_correctly_named_notebooks(tmp_path):
    status, out, err = run("collect", canvas_download(tmp_path), "--out", tmp_path / "handed-in")
    assert status == 0, out + err
    assert "smithalice: 03_scoring-1.ipynb -> 03_scoring.ipynb" in out
    assert sorted(str(p.relative_to(tmp_path / "handed-in"))
                  for p in (tmp_path / "handed-in").rglob("*.ipynb")) == [
        "jonesbob/03_scoring.ipynb", "smithalice/03_scoring.ipynb",
        "smithalice/05_softmax.ipynb"]  # fmt: skip
    named = tmp_path / "named"
    write(named / "smithalice" / "03_scoring.ipynb", solved())
    write(named / "smithalice" / "05_softmax.ipynb", softmax_solved())
    write(named / "jonesbob" / "03_scoring.ipynb", mixed_notebook())
    book = tmp_path / "grades.csv"
    collected = json.loads(run("check", "--json", "-q", "-j", "2", tmp_path / "handed-in" / "jonesbob",
                               tmp_path / "handed-in" / "smithalice", "--gradebook", book)[1])  # fmt: skip
    by_name = json.loads(run("check", "--json", "-q", "-j", "2", named / "jonesbob",
                             named / "smithalice")[1])  # fmt: skip
    assert rows_by_student(collected) == rows_by_student(by_name)
    assert collected["summary"] == by_name["summary"]
    lines = list(csv.reader(io.StringIO(book.read_text())))
    lessons = ["03_scoring", "05_softmax"]
    written = [f"{lesson} (written)" for lesson in lessons
               if any(e.written for e in registry.for_notebook(lesson))]  # fmt: skip
    assert lines[0][5:-2] == ["03_scoring", *written, "05_softmax"]  # one column per lesson
    possible = dict(zip(lines[0][5:-2], lines[1][5:-2], strict=True))
    for lesson in lessons:
        assert possible[lesson] == str(sum(e.points for e in registry.for_notebook(lesson)))
    alice = next(line for line in lines if line[0] == "smithalice")
    assert alice[-1] == "100"  # every exercise passed; the written answer waits


def test_moodle_folders_and_a_gradescope_export(tmp_path):
    moodle = tmp_path / "moodle"
    write(moodle / "Jane Smith_5501_assignsubmission_file_" / "03_scoring (2).ipynb", b"{}")
    write(moodle / "Jane Smith_5507_assignsubmission_file_" / "03_scoring.ipynb", b"{}")
    write(moodle / "Li Wei_5502_assignsubmission_file_" / "my_03.ipynb", b"{}")
    status, out, _ = run("collect", moodle, "--out", tmp_path / "m")
    assert status == 0
    assert sorted(str(p.relative_to(tmp_path / "m")) for p in (tmp_path / "m").rglob("*")
                  if p.is_file()) == ["Jane_Smith-5501/03_scoring.ipynb",
                                      "Jane_Smith-5507/03_scoring.ipynb",
                                      "Li_Wei/my_03.ipynb"]  # fmt: skip
    assert "Li_Wei: my_03.ipynb matches no lesson; kept as my_03.ipynb" in out
    meta = ("submission_11:\n  :submitters:\n  - :name: Ann Lee\n    :sid: '77'\n"
            "    :email: alee@uni.example\n  :score: 0.0\nsubmission_12:\n  :submitters:\n"
            "  - :name: Ben Ode\n    :sid: '78'\n    :email: ''\n")  # fmt: skip
    export = zip_of(tmp_path / "export.zip", {
        "assignment_9_export/submission_metadata.yml": meta.encode(),
        "assignment_9_export/submission_11/03_scoring.ipynb": b"{}",
        "assignment_9_export/submission_11/03_scoring-2.ipynb": b"{}",
        "assignment_9_export/submission_12/work/05_softmax.ipynb": b"{}",
    })  # fmt: skip
    status, out, _ = run("collect", export, "--out", tmp_path / "g", "--json")
    done = json.loads(out)
    assert done["layout"] == "gradescope" and done["students"] == 2
    assert sorted(str(p.relative_to(tmp_path / "g")) for p in (tmp_path / "g").rglob("*")
                  if p.is_file()) == ["78/05_softmax.ipynb", "alee/03_scoring-2.ipynb",
                                      "alee/03_scoring.ipynb"]  # fmt: skip
    assert any("2 notebooks for lesson 03_scoring" in note for note in done["notes"])


def test_hostile_zips_are_refused_entry_by_entry(tmp_path):
    import zlib

    bomb = b"\0" * (co.NOTEBOOK_SIZE + 2**20)
    assert len(zlib.compress(bomb)) < 2**20  # small in the zip, large inflated
    outside = tmp_path / "outside.ipynb"
    attack = zip_of(tmp_path / "attack.zip", {
        "../../outside.ipynb": b"{}",
        "smithalice_1_2_../../../outside.ipynb": b"{}",
        "/tmp/absolute.ipynb": b"{}",
        "jonesbob_3_4_03_scoring.ipynb": ("link", "/etc/shadow"),
        "bomber_5_6_03_scoring.ipynb": bomb,
        "nested_7_8_more.zip": b"PK",
        "honest_9_10_03_scoring.ipynb": b"{}",
    })  # fmt: skip
    out = tmp_path / "out" / "handed-in"
    status, text, _ = run("collect", attack, "--out", out)
    assert status == 1
    for needle in ("../../outside.ipynb: refused (its path leaves the download)",
                   "/tmp/absolute.ipynb: refused", "03_scoring.ipynb: refused (a symbolic link)",
                   f"bomber_5_6_03_scoring.ipynb: refused (more than {co.NOTEBOOK_SIZE} bytes)",
                   "nested_7_8_more.zip: refused (a zip inside the zip)"):  # fmt: skip
        assert needle in text, (needle, text)
    assert not outside.exists() and not os.path.exists("/tmp/absolute.ipynb")
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == ["honest/03_scoring.ipynb"]
    assert all(".." not in part for p in out.rglob("*") for part in p.parts)


def test_a_download_past_the_total_cap_stops_and_links_are_not_written_through(
    tmp_path, monkeypatch
):
    download = zip_of(tmp_path / "big.zip", {f"s{n}_1_{n}_03_scoring.ipynb": b"x" * 1000
                                             for n in range(5)})  # fmt: skip
    monkeypatch.setattr(co, "TOTAL_SIZE", 3000)
    status, out, err = run("collect", download, "--out", tmp_path / "o", "--json")
    assert status == 2 and "more than 3000 bytes in all" in err
    assert json.loads(out)["error"]
    monkeypatch.undo()
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    (tmp_path / "o2" / "s1").mkdir(parents=True)
    (tmp_path / "o2" / "s1" / "03_scoring.ipynb").symlink_to(target)
    status, out, _ = run("collect", download, "--out", tmp_path / "o2", "--overwrite")
    assert target.read_text() == "keep"
    assert "s1/03_scoring.ipynb: not written" in out


def test_a_renamed_notebook_matches_its_lesson_and_two_are_reported():
    assert lesson_of("03_scoring (1)") == ("03_scoring", False)
    assert lesson_of("03_scoring-2") == ("03_scoring", False)
    assert lesson_of("03_scoring - Copy") == ("03_scoring", False)
    assert lesson_of("03_scoring-Copy1") == ("03_scoring", False)
    assert lesson_of("03_scoring_answers") == (None, False)
    chosen, refused = assign(["a/03_scoring.ipynb", "a/03_scoring (1).ipynb"])
    assert chosen == {"a/03_scoring.ipynb": "03_scoring"}
    assert "2 notebooks for lesson 03_scoring in one folder" in refused["a/03_scoring (1).ipynb"]
    assert "03_scoring.ipynb is graded" in refused["a/03_scoring (1).ipynb"]
    chosen, refused = assign(["a/03_scoring (1).ipynb", "a/03_scoring-2.ipynb"])
    assert chosen == {} and all("none is graded" in r for r in refused.values())


def test_the_grader_says_when_it_matched_a_name_and_never_picks_one_of_two(tmp_path):
    write(tmp_path / "ann" / "03_scoring (1).ipynb", mixed_notebook())
    write(tmp_path / "ben" / "03_scoring (1).ipynb", mixed_notebook())
    write(tmp_path / "ben" / "03_scoring-2.ipynb", solved())
    status, out, _ = run("check", "--json", "-q", tmp_path / "ann", tmp_path / "ben")
    report = json.loads(out)
    ann = {r["exercise"]: r["status"] for r in report["rows"] if "/ann/" in r["notebook"]}
    assert ann["score_eat_seeds"] == "passed" and ann["rank_witness"] == "wrong"
    assert report["matched"] == {str(tmp_path / "ann" / "03_scoring (1).ipynb"): "03_scoring"}
    ben = [r for r in report["rows"] if "/ben/" in r["notebook"]]
    assert [r["exercise"] for r in ben] == ["(notebook)", "(notebook)"]
    assert all("2 notebooks for lesson 03_scoring" in r["message"] for r in ben)
    text = run("check", "-q", tmp_path / "ann")[1]
    assert "03_scoring (1).ipynb: graded as lesson 03_scoring (by its name's start)" in text


GRADING_OUTPUTS = ["handed-in/alice/03_scoring.ipynb", "grades.csv", "feedback/alice.html",
                   "written/double_keys.html", "similar.html", "parts/part-1.jsonl",
                   "results/report.json", "class-report.html", "report.html",
                   "autograder.zip", "submissions.zip"]  # fmt: skip


def test_a_class_graded_in_the_course_folder_is_ignored_by_git_lint_and_pytest():
    import shutil
    import subprocess
    import sys

    import pytest as _pytest

    tomllib = _pytest.importorskip("tomllib", reason="tomllib is Python 3.11 and newer")

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        import pytest

        pytest.skip("not a git checkout")
    for name in GRADING_OUTPUTS:
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT)
        assert ignored.returncode == 0, f"{name} is not in .gitignore"
    ruff = [sys.executable, "-m", "ruff", "check", "--force-exclude", "--stdin-filename"]
    bad = json.dumps({"cells": [{"cell_type": "code", "source": "import os\nx=1;y==2",
                                 "metadata": {}, "outputs": [], "execution_count": None}],
                      "metadata": {}, "nbformat": 4, "nbformat_minor": 5})  # fmt: skip
    for name in ("handed-in/alice/03_scoring.ipynb", "feedback/x.ipynb", "parts/x.py"):
        done = subprocess.run([*ruff, name, "-"], input=bad if name.endswith(".ipynb") else
                              "import os\n", capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        assert done.returncode == 0, (name, done.stdout)
    seen = subprocess.run([*ruff, "elsewhere/x.py", "-"], input="import os\n",
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert seen.returncode == 1  # the same code anywhere else is linted: the check can fail
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    for folder in ("handed-in", "feedback", "written", "parts", "results", "my-work"):
        assert folder in options["norecursedirs"]
