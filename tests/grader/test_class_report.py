"""`--class-report`: what the class got wrong, on a class whose mistakes are known.

Five students of lesson 03, built so that every count is known before grading:

- sol: the solution (everything passed);
- mix1, mix2: ``mixed_notebook`` (score_eat_seeds passed, rank_witness wrong with
  ``trivial_witness``, rank_witness_general and scores_loop not attempted, double_keys's
  check cell removed);
- stub: the handed-out notebook (everything not attempted);
- zed: the solution with rank_witness answered ``z = 0`` (``trivial_witness``).
"""

import json

import pytest

from attnlib.grade import classreport
from attnlib.selfcheck import registry
from attnlib.selfcheck.mistakes import MISTAKES
from tests.test_check_cli import mixed_notebook

from .conftest import IDS, solved, src, unsolved, write
from .test_exports import run

PASSED, WRONG, NOT, MISSING = "passed", "wrong", "not attempted", "missing"
KNOWN = {  # the class as built: exercise -> status per student (and the mistake made)
    "sol": dict.fromkeys(IDS, PASSED),
    "mix1": {"score_eat_seeds": PASSED, "rank_witness": WRONG, "rank_witness_general": NOT,
             "scores_loop": NOT, "double_keys": MISSING},
    "stub": dict.fromkeys(IDS, NOT),
    "zed": dict(dict.fromkeys(IDS, PASSED), rank_witness=WRONG),
}  # fmt: skip
KNOWN["mix2"] = KNOWN["mix1"]
MISTAKE = {"mix1": "trivial_witness", "mix2": "trivial_witness", "zed": "trivial_witness"}


def zed():
    nb = solved()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and 'check("rank_witness"' in src(cell):
            cell["source"] = 'z = [0, 0, 0]\ncheck("rank_witness", z)'
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    makers = {"sol": solved, "mix1": mixed_notebook, "mix2": mixed_notebook, "stub": unsolved,
              "zed": zed}  # fmt: skip
    for name, make in makers.items():
        write(root / name / "03_scoring.ipynb", make())
    status, out, err = run("check", "--json", "-q", "-j", "2", *(root / n for n in makers),
                           "--class-report", root / "report.html")  # fmt: skip
    assert status == 1, err
    return root, json.loads(out)


def test_the_counts_match_the_class_as_built(graded):
    _, report = graded
    data = report["class_report"]
    assert data["students"] == len(KNOWN)
    # the module's contract: a removed check cell counts as not attempted
    groups = {PASSED: "passed", WRONG: "wrong", NOT: "not attempted", MISSING: "not attempted"}
    for exercise in data["exercises"]:
        expected = {"passed": 0, "wrong": 0, "not attempted": 0, "in error": 0}
        for statuses in KNOWN.values():
            expected[groups[statuses[exercise["exercise"]]]] += 1
        assert exercise["counts"] == expected, exercise["exercise"]
        assert exercise["missed"] == len(KNOWN) - expected["passed"]
        made = {}
        for student, code in MISTAKE.items():
            if KNOWN[student][exercise["exercise"]] == WRONG:
                made[code] = made.get(code, 0) + 1
        assert {m["mistake"]: m["count"] for m in exercise["mistakes"]} == made
    missed = [e["missed"] for e in data["exercises"]]
    assert missed == sorted(missed, reverse=True)  # ranked by what most students missed
    assert data["exercises"][0]["exercise"] == "rank_witness"
    assert sorted(e["exercise"] for e in data["exercises"]) == sorted(IDS)


def test_each_mistake_points_to_a_paragraph_of_its_lesson(graded):
    _, report = graded
    (mistake,) = report["class_report"]["exercises"][0]["mistakes"]
    assert mistake["explanation"] == MISTAKES["trivial_witness"]
    headings = [h for h, _ in classreport.sections(registry.get("rank_witness").lesson)]
    assert mistake["paragraph"]["heading"] in headings
    assert mistake["paragraph"]["heading"] not in classreport.RECAPS
    overflow = classreport.paragraph("05_softmax", MISTAKES["overflow"])
    assert "maximum" in overflow["heading"]  # the section that teaches the fix
    assert mistake["paragraph"]["sentence"]


def test_the_page_is_offline_and_reads_without_colour(graded):
    root, report = graded
    page = (root / "report.html").read_text(encoding="utf-8")
    for banned in ("<script", "<img", "<link", "http", "@import", "url(", "color:"):
        assert banned not in page.replace("color: #000", "").lower(), banned
    top = report["class_report"]["exercises"][0]
    assert f'<strong>rank_witness</strong></td><td class="n">{top["missed"]} of 5</td>' in page
    assert "trivial_witness</strong>: 3 students." in page
    assert page.index("rank_witness</strong>") < page.index("score_eat_seeds</strong>")
    assert "\u2588" in page and "\u2591" in page  # shares as text bars, not colours
