"""Exports no student can break: formula names, bytes that are not UTF-8, lone surrogates,
and `attnlib report` refusing malformed parts with one line naming the part.

The class: five folders whose names a spreadsheet would read as formulas or that hold a
byte that is not UTF-8, each with the solution notebook, and one student whose markdown
answer holds a lone surrogate. Every export must finish, every student's row be there,
every text cell be neutralised and every odd name be marked in the report.
"""

import copy
import csv
import io
import json
import os
from pathlib import Path

import pytest

from attnlib.grade.safe import FORMULA_START

from .conftest import solved, src, write
from .test_exports import exports, run

FORMULAS = ["=1+1", "+SUM(1,2)", "@SUM(1)", '=HYPERLINK("evil.example","click")', "-2+3"]
SURROGATE = "Twice the key doubles the score \ud800 because each product has one k."


def surrogate_notebook():
    nb = solved()
    at = next(i for i, c in enumerate(nb["cells"]) if 'check("double_keys"' in src(c))
    nb["cells"].insert(at + 1, {"cell_type": "markdown", "metadata": {}, "source": SURROGATE})
    return json.dumps(nb).encode("ascii")  # the JSON escape \ud800: valid JSON, no UTF-8 of it


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    folders = [root / "class" / name for name in FORMULAS]
    raw = os.fsencode(root / "class") + b"/caf\xe9"  # a byte that is not UTF-8
    os.makedirs(raw)
    with open(raw + b"/03_scoring.ipynb", "wb") as f:
        f.write(json.dumps(solved()).encode())
    folders.append(Path(os.fsdecode(raw)))
    for folder in folders[:-1]:
        write(folder / "03_scoring.ipynb", solved())
    write(root / "class" / "sam" / "03_scoring.ipynb", surrogate_notebook())
    folders.append(root / "class" / "sam")
    status, out, err = run("check", "--jsonl", "-q", "-j", "2", *folders, *exports(root / "one"))
    assert status == 0, err  # every exercise passed: never 2, never a crash
    (root / "all.jsonl").write_text(out)
    return root


def test_every_export_finishes_and_every_text_cell_is_neutralised(hostile):
    status, out, err = run("report", "--json", hostile / "all.jsonl", *exports(hostile / "two"))
    assert status == 0, err
    report = json.loads(out)
    lines = list(csv.reader(io.StringIO((hostile / "two" / "grades.csv").read_text("utf-8"))))
    students = lines[2:]
    assert len(students) == 7
    for line in lines:
        for cell in line[:5]:
            assert not cell.startswith(FORMULA_START), cell
    names = [line[0] for line in students]
    assert names[:5] == ["'" + name for name in FORMULAS]
    assert names[5] == "caf\\xe9" and [line[3] for line in students] == names
    assert [line[-1] for line in students] == ["100"] * 7  # every row graded in full
    assert all(not cell.startswith("'") for line in students for cell in line[5:])
    marked = {note["folder"].rsplit("/", 1)[-1] for note in report["export_notes"]}
    assert marked == {*FORMULAS, "caf\\xe9"}
    assert len(list((hostile / "two" / "feedback").iterdir())) == 7
    page = (hostile / "two" / "written" / "double_keys.html").read_text("utf-8")
    assert "\\ud800 because" in page and "caf\\xe9" in page
    scores = list(csv.reader(io.StringIO((hostile / "two" / "written" / "written_scores.csv")
                                         .read_text("utf-8"))))  # fmt: skip
    assert all(not cell.startswith(FORMULA_START) for line in scores for cell in line)
    text = run("report", hostile / "all.jsonl", "--gradebook", hostile / "three.csv")[1]
    assert "caf\\xe9: names: written as caf\\xe9" in text


def test_written_scores_come_back_for_a_neutralised_name(hostile, tmp_path):
    book = hostile / "one" / "written" / "written_scores.csv"
    lines = list(csv.reader(io.StringIO(book.read_text("utf-8"))))
    for line in lines[1:]:
        line[3] = "1"
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(lines)
    status, out, err = run("report", "--json", hostile / "all.jsonl", "--written-scores", filled)
    assert status == 0, err
    written = json.loads(out)["points"]["written"]
    assert len(written) == 7 and all(v == {"double_keys": 1.0} for v in written.values())


def _lines(hostile):
    return [json.loads(line) for line in (hostile / "all.jsonl").read_text().splitlines()]


def _mutations(lines):
    """(what, mutate(lines)) pairs: each makes one malformed part."""
    first = next(i for i, line in enumerate(lines) if "notebook" in line)
    second = next(i for i, line in enumerate(lines) if "notebook" in line and i != first)
    run_at = next(i for i, line in enumerate(lines) if "run" in line)
    summary_at = next(i for i, line in enumerate(lines) if "summary" in line)

    def at(i, change):
        def mutate(found):
            change(found[i])
            return found

        return mutate

    def row(i, **fields):
        return at(i, lambda line: line["rows"][0].update(fields))

    def steal(found):  # the other folder's rows in the first line: five free passes
        found[first]["rows"] = copy.deepcopy(found[second]["rows"])
        return found

    return [
        ("rows is text", at(first, lambda line: line.update(rows="all passed"))),
        ("row lacks status", at(first, lambda line: line["rows"][0].pop("status"))),
        ("status invented", row(first, status="excellent")),
        ("exercise of another lesson", row(first, exercise="softmax")),
        ("rows of another folder", steal),
        ("folder not in class", at(first, lambda line: line.update(folder="/elsewhere"))),
        ("notebook moved", at(first, lambda line: line.update(folder=lines[second]["folder"]))),
        ("judged twice", at(first, lambda line: line["rows"].append(dict(line["rows"][0])))),
        ("credit 7", row(first, credit=7)),
        ("mistake a number", row(first, mistake=3)),
        ("cell error malformed", at(first, lambda line: line.update(cell_errors=["x"]))),
        (
            "answer to another lesson",
            at(first, lambda line: line["answers"].update(softmax={"code": "", "text": ""})),
        ),  # fmt: skip
        ("answer not a dict", at(first, lambda line: line["answers"].update(double_keys=1))),
        ("unknown key", at(first, lambda line: line.update(passed_everything=True))),
        ("forged lesson", at(first, lambda line: line.update(lesson="05_softmax"))),
        ("groups text", at(run_at, lambda line: line["run"].update(groups="everyone"))),
        ("shard 4 of 3", at(run_at, lambda line: line["run"].update(shard=[4, 3]))),
        ("limits text", at(summary_at, lambda line: line["limits"].update(cell_timeout="x"))),
        ("tampered a number", at(summary_at, lambda line: line.update(tampered=5))),
        ("all_passed text", at(summary_at, lambda line: line.update(all_passed="yes"))),
        ("uids text", at(summary_at, lambda line: line.update(sandbox_uids=["root"]))),
        ("a stray object", lambda found: [*found, {"hello": 1}]),
        ("a line that is a list", lambda found: [*found, [1, 2]]),
    ]


def test_report_refuses_every_malformed_part_with_one_line_naming_it(hostile, tmp_path):
    mutations = _mutations(_lines(hostile))
    assert len(mutations) >= 15
    for n, (what, mutate) in enumerate(mutations):
        part = tmp_path / f"bad{n}.jsonl"
        found = mutate(_lines(hostile))
        part.write_text("".join(json.dumps(line) + "\n" for line in found))
        status, out, err = run("report", "--json", part, "--gradebook", tmp_path / "g.csv")
        assert status == 2, (what, err)
        assert json.loads(out)["all_passed"] is False, what
        assert err.count("\n") == 1 and str(part) in err and "Traceback" not in err, (what, err)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100000 + "\n")
    status, _, err = run("report", deep)
    assert status == 2 and "line 1: not JSON" in err
