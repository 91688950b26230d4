"""Points, gradebook, feedback, written answers, similarity, shards and `attnlib report`.

A class of four is graded once per module (lesson 03, one notebook each), as one run and
as three shards; every export test reads those recorded JSON-lines files, which is what
`attnlib report` is for. The Gradescope tests are in test_exports_gradescope.py.

- alice: the solution, plus a markdown cell saying why for ``double_keys``;
- bob: one exercise passed, one wrong with a named mistake, two not attempted, one missing;
- carol: alice's notebook with the multi-line answer's names renamed and re-spaced;
- dave: the solution with the same one-line answers as alice but his own
  ``key_dependency``.
"""

import contextlib
import csv
import io
import json
import sys
from pathlib import Path

import pytest

from attnlib.cli import main
from attnlib.selfcheck.mistakes import MISTAKES
from tests.test_check_cli import mixed_notebook

from .conftest import solved, src, write

ALICE_WHY = "Each score is a sum of q_m * k_m with one k per product, so 2k gives 2 <times> it."
DAVE_KEY_DEPENDENCY = '''def key_dependency(K):
    """z with K^T z = 0 and z[-1] = 1, for K of shape (d_k + 1, d_k)."""
    _, _, rows = np.linalg.svd(K.T)  # the last right singular vector spans the null space
    z = rows[-1]
    return z / z[-1]


check("rank_witness_general", key_dependency)'''


def same_class_report(a, b):
    """Two ``--json`` reports are the same text, apart from ``sandbox_uids``: the uids a run
    leased depend on which other graders ran on the machine at the time, not on the class."""
    first, second = json.loads(a), json.loads(b)
    first.pop("sandbox_uids", None), second.pop("sandbox_uids", None)
    return json.dumps(first, indent=1) == json.dumps(second, indent=1)  # keys in their order


def _replace_cell(nb, needle, new_source):
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and needle in src(cell):
            cell["source"] = new_source(src(cell)) if callable(new_source) else new_source
            return nb
    raise AssertionError(f"no cell holds {needle!r}")


def alice():
    nb = solved()
    at = next(i for i, c in enumerate(nb["cells"]) if 'check("double_keys"' in src(c))
    nb["cells"].insert(at + 1, {"cell_type": "markdown", "metadata": {}, "source": ALICE_WHY})
    return nb


def carol():
    def rename(source):
        source = source.replace("d_k = K.shape[-1]", "width   =  K.shape[ -1 ]")
        source = source.replace("K[:d_k].T, -K[d_k]", "K[:width].T,-K[width]")
        return source.replace("c = ", "coeffs = ").replace("(c, 1.0)", "(coeffs, 1.0)")

    return _replace_cell(alice(), 'check("rank_witness_general"', rename)


def dave():
    return _replace_cell(solved(), 'check("rank_witness_general"', DAVE_KEY_DEPENDENCY)


def run(*args):
    """``main(args)`` with its stdout captured: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def exports(folder):
    """The export options writing into ``folder``."""
    folder = Path(folder)
    return [
        "--gradebook", folder / "grades.csv", "--feedback", folder / "feedback",
        "--written", folder / "written", "--similarity", folder / "similar.html",
    ]  # fmt: skip


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """The class graded as one run (with every export) and as three shards."""
    root = tmp_path_factory.mktemp("exports")
    makers = {"alice": alice, "bob": mixed_notebook, "carol": carol, "dave": dave}
    for name, make in makers.items():
        write(root / "class" / name / "03_scoring.ipynb", make())
    folders = [root / "class" / name for name in makers]
    status, out, err = run("check", "--jsonl", "-q", "-j", "2", *folders, *exports(root / "one"))
    assert status == 1, err
    (root / "all.jsonl").write_text(out)
    for i in (1, 2, 3):
        status, out, _ = run("check", "--jsonl", "-q", "-j", "2", "--shard", f"{i}/3", *folders)
        (root / f"part{i}.jsonl").write_text(out)
    return root


def notebooks_in(path):
    return [json.loads(line)["notebook"] for line in Path(path).read_text().splitlines()
            if '"notebook"' in line[:14]]  # fmt: skip


def tree(folder):
    folder = Path(folder)
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_three_shards_merge_to_the_single_run_byte_for_byte(graded):
    parts = [graded / f"part{i}.jsonl" for i in (1, 2, 3)]
    graded_by = [notebooks_in(p) for p in parts]
    assert sorted(nb for found in graded_by for nb in found) == sorted(
        notebooks_in(graded / "all.jsonl")
    )
    assert [len(found) for found in graded_by] == [2, 1, 1]  # alice and dave, bob, carol
    status, merged_json, _ = run("report", "--json", *parts, *exports(graded / "merged"))
    assert status == 1
    assert tree(graded / "merged") == tree(graded / "one")
    assert len(tree(graded / "one")) == 1 + 4 + 2 + 1  # gradebook, 4 pages, written x2, similarity
    status, single_json, _ = run("report", "--json", graded / "all.jsonl")
    assert same_class_report(merged_json, single_json)
    status, merged_text, _ = run("report", *reversed(parts))
    assert merged_text == run("report", graded / "all.jsonl")[1]
    assert merged_text.splitlines()[-1].startswith(
        "20 exercises in 4 notebooks: 16 passed, 1 wrong"
    )


def test_report_refuses_a_missing_or_doubled_shard_and_other_classes(graded, tmp_path):
    parts = [graded / f"part{i}.jsonl" for i in (1, 2, 3)]
    status, out, err = run("report", "--json", *parts[:2])
    assert status == 2 and "missing [3]" in err and json.loads(out)["all_passed"] is False
    status, _, err = run("report", parts[0], *parts)
    assert status == 2 and "given twice [1]" in err
    status, _, err = run("report", graded / "all.jsonl", parts[0])
    assert status == 2 and "an unsharded run cannot be merged" in err
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(Path(parts[2]).read_text().splitlines(keepends=True)[:-1]))
    status, _, err = run("report", parts[0], parts[1], cut)
    assert status == 2 and "expected one 'summary' line, found 0" in err


def test_sandbox_keys_links_and_unread_files_merge_as_one_run(tmp_path):
    """A class of files that are refused or not read (no kernel starts): its three shards,
    merged, give the JSON of one ``attnlib check --json`` run, sandbox keys included."""
    import os

    root = tmp_path / "class"
    NB = "03_scoring.ipynb"
    for name in ("ann", "bea", "cid", "dan", "eve"):
        (root / name).mkdir(parents=True)
    (root / "ann" / NB).symlink_to(tmp_path / "elsewhere.ipynb")  # refused: a link
    os.mkfifo(root / "bea" / NB)  # refused: not a regular file
    with open(root / "cid" / NB, "wb") as f:
        f.truncate(64 * 2**20)  # not read: past NOTEBOOK_SIZE (sparse)
    write(root / "dan" / NB, b"")  # read, and one error row: not a notebook
    write(root / "eve" / NB, b"")
    with open(root / "eve" / "data.bin", "wb") as f:
        f.truncate(64 * 2**20)  # a listed data file past DATA_FILE_SIZE: not read
    (root / "fay").symlink_to(root / "dan", target_is_directory=True)  # refused: a linked folder
    folders = [root / n for n in ("eve", "fay", "ann", "dan", "cid", "bea")]  # not sorted
    common = ["-q", "--data-file", "data.bin", *folders]
    status, single, err = run("check", "--json", *common)
    assert status == 1, err
    parts = []
    for i in (1, 2, 3):
        part = tmp_path / f"part{i}.jsonl"
        status, _, err = run("check", "--jsonl", "--shard", f"{i}/3", "--output", part, *common)
        assert status == 1, err
        parts.append(part)
    status, merged, _ = run("report", "-q", "--json", *reversed(parts))
    assert status == 1
    assert same_class_report(merged, single)  # byte for byte but the run's own uids
    report = json.loads(merged)
    assert {"sandbox", "sandbox_detail", "sandbox_uids", "not_read"} <= report.keys()
    assert report["sandbox_detail"]
    assert list(report["not_read"]) == [str(root / "eve" / "data.bin"), str(root / "cid" / NB)]
    refused = [r["notebook"] for r in report["rows"] if "symbolic link" in r["message"]]
    assert refused == [str(root / "fay"), str(root / "ann" / NB)]
    assert report["summary"]["notebooks"] == 3  # eve, dan, cid: the refused are no notebooks


def test_a_merge_is_sandboxed_only_if_every_part_was(tmp_path):
    from attnlib.grade import LIMIT_NAMES
    from attnlib.grade.report import MergeError, merge

    limits = dict.fromkeys(LIMIT_NAMES, 1)
    lines = {1: [], 2: []}
    run_line = {"run": {"groups": [["a", []], ["b", []]], "shard": None}}
    for i, (box, detail, uids) in {1: (True, "bwrap", [61001]), 2: (False, "none", [])}.items():
        summary = {"summary": {}, "by_folder": {}, "all_passed": False, "tampered": [],
                   "limits": limits, "not_read": {}, "sandbox": box, "sandbox_detail": detail,
                   "sandbox_uids": uids}  # fmt: skip
        run_line["run"]["shard"] = [i, 2]
        lines[i] = [json.dumps(run_line), json.dumps(summary)]
        (tmp_path / f"p{i}.jsonl").write_text("\n".join(lines[i]))
    report = merge([tmp_path / "p1.jsonl", tmp_path / "p2.jsonl"])
    assert report["sandbox"] is False
    assert report["sandbox_detail"] == "bwrap; none"
    assert report["sandbox_uids"] == [61001]
    del limits["tmpfs"]  # a part of an older grader, without the sandbox's limits
    (tmp_path / "old.jsonl").write_text(
        json.dumps(run_line | {"run": {"groups": [], "shard": None}})
        + "\n"
        + json.dumps(summary | {"limits": limits})
    )
    with pytest.raises(MergeError, match="its limits lack tmpfs"):
        merge([tmp_path / "old.jsonl"])


def test_shard_option_is_checked(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--shard", "4/3", "x"])
    assert "--shard: i must be between 1 and N, got 4/3." in capsys.readouterr().err


def test_json_carries_points_and_the_canvas_gradebook_has_its_layout(graded):
    status, out, _ = run("report", "--json", graded / "all.jsonl")
    report = json.loads(out)
    bob = {r["exercise"]: r for r in report["rows"] if "/bob/" in r["notebook"]}
    assert {i: (r["points"], r["max_points"]) for i, r in bob.items()} == {
        "score_eat_seeds": (1.0, 1.0), "rank_witness": (0.0, 1.0),
        "rank_witness_general": (0.0, 1.0), "scores_loop": (0.0, 1.0), "double_keys": (0.0, 1.0),
    }  # fmt: skip
    assert report["points"]["possible"] == 6.0  # 5 exercises and double_keys' written answer
    lines = list(csv.reader(io.StringIO((graded / "one" / "grades.csv").read_text())))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_scoring",
                        "03_scoring (written)", "Final Points", "Final Score"]  # fmt: skip
    assert lines[1] == ["Points Possible", "", "", "", "", "5", "1", "", ""]
    rows = {line[0]: line for line in lines[2:]}
    assert list(rows) == ["alice", "bob", "carol", "dave"]
    assert rows["bob"] == ["bob", "", "", "bob", "", "1", "", "1", "20"]
    # every exercise passed, the written answer not read yet: 100, not 5 of 6
    assert rows["alice"][-4:] == ["5", "", "5", "100"]
    book = graded / "per-exercise.csv"
    run("report", graded / "all.jsonl", "--gradebook", book, "--gradebook-columns", "exercise")
    lines = list(csv.reader(io.StringIO(book.read_text())))
    assert lines[0][5:] == [
        "03_scoring: score_eat_seeds", "03_scoring: rank_witness",
        "03_scoring: rank_witness_general", "03_scoring: scores_loop", "03_scoring: double_keys",
        "03_scoring: double_keys (written)", "Final Points", "Final Score",
    ]  # fmt: skip
    assert lines[1] == ["Points Possible", "", "", "", "", "1", "1", "1", "1", "1", "1", "", ""]
    rows = {line[0]: line for line in lines[2:]}
    assert rows["bob"] == ["bob", "", "", "bob", "", "1", "0", "0", "0", "0", "", "1", "20"]
    assert rows["alice"][-2:] == ["5", "100"]
    run("report", graded / "all.jsonl", "--gradebook", book, "--gradebook-columns", "total")
    lines = list(csv.reader(io.StringIO(book.read_text())))
    assert lines[0][5:] == ["Exercises", "Written answers", "Final Points", "Final Score"]
    assert lines[1][5:7] == ["5", "1"]
    assert {line[0]: line[5:] for line in lines[2:]}["bob"] == ["1", "", "1", "20"]


def test_points_file_and_moodle_layout_and_roster(graded, tmp_path):
    table = tmp_path / "points.toml"
    table.write_text(
        "[points]\nscore_eat_seeds = 2.5\nrank_witness = 0\n[written]\ndouble_keys = 3\n"
    )
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,Username,Email address\nbob,b.builder,bob@example.org\n")
    book = tmp_path / "moodle.csv"
    status, out, _ = run("report", "--json", graded / "all.jsonl", "--points", table,
                         "--gradebook", book, "--gradebook-layout", "moodle", "--roster", roster,
                         "--gradebook-columns", "exercise")  # fmt: skip
    assert status == 1
    report = json.loads(out)
    assert [c["exercise"] for c in report["points"]["columns"]] == [
        "score_eat_seeds", "rank_witness_general", "scores_loop", "double_keys",
    ]  # fmt: skip
    assert report["points"]["possible"] == 2.5 + 1 + 1 + 1 + 3
    lines = list(csv.reader(io.StringIO(book.read_text())))
    assert lines[0][:3] == ["Username", "ID number", "Email address"]
    assert lines[0][-2:] == ["Total points", "Total percent"]
    assert lines[2] == [
        "b.builder",
        "",
        "bob@example.org",
        "2.5",
        "0",
        "0",
        "0",
        "",
        "2.5",
        "45.455",  # of 5.5: the 3 written points count once scored
    ]
    bad = tmp_path / "bad.json"
    for text, message in [
        ('{"points": {"no_such": 1}}', "'no_such' is not an exercise"),
        ('{"scores_loop": -1}', "points.scores_loop must be 0 or more, got -1"),
        ('{"written": {"scores_loop": 1}}', "'scores_loop' has no written answer"),
    ]:
        bad.write_text(text)
        status, _, err = run("report", graded / "all.jsonl", "--points", bad)
        assert status == 2 and message in err, err


def test_feedback_pages_name_the_mistake_and_never_the_answer(graded):
    page = (graded / "one" / "feedback" / "bob.html").read_text()
    from attnlib.selfcheck import registry

    exercise = registry.get("rank_witness")
    assert MISTAKES["trivial_witness"] in page and exercise.hints[0] in page
    assert "1 of 5 points (written answers count once a teacher has read them)." in page
    for leak in ("-1 / 2", "z = [", "BEGIN SOLUTION", "expected", exercise.solution_text()):
        assert leak not in page
    for page in tree(graded / "one" / "feedback").values():  # self-contained, offline
        text = page.decode()
        assert "<script" not in text and "<link" not in text and "http" not in text
        assert "src=" not in text and "@import" not in text


def test_feedback_escapes_what_a_student_controls(graded):
    from attnlib.grade import feedback, points
    from attnlib.grade.report import merge
    from attnlib.selfcheck import registry

    report = points.score(merge([graded / "all.jsonl"]), registry)
    folder = next(f for f in report["by_folder"] if f.endswith("bob"))
    notebook = next(iter(n for n in report["cell_errors"] if n.startswith(folder)))
    report["cell_errors"][notebook] = [[7, "ValueError: <img src=x onerror=alert(1)>"]]
    broken = {"notebook": f"{folder}/05_softmax.ipynb", "exercise": "(notebook)",
              "status": "error", "mistake": None, "message": "not gradable: <svg onload=x>"}  # fmt: skip
    report["rows"].append(broken)
    page = feedback.page(report, folder, registry)
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "05_softmax.ipynb: not gradable: &lt;svg onload=x&gt;</li>" in page


def test_written_page_collects_the_why_and_scores_come_back(graded, tmp_path):
    page = (graded / "one" / "written" / "double_keys.html").read_text()
    assert ALICE_WHY.replace("<", "&lt;").replace(">", "&gt;") in page
    assert "<times>" not in page and "Rubric" in page and "(no text written)" in page
    from attnlib.selfcheck import registry

    assert registry.get("double_keys").written in page
    with open(graded / "one" / "written" / "written_scores.csv", newline="") as f:
        lines = list(csv.DictReader(f))
    assert [(Path(r["folder"]).name, r["exercise"], r["score"]) for r in lines] == [
        (name, "double_keys", "") for name in ("alice", "bob", "carol", "dave")
    ]
    lines[0]["score"], lines[1]["score"] = "1", "0.5"
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    book = tmp_path / "grades.csv"
    status, _, _ = run("report", graded / "all.jsonl", "--written-scores", filled,
                       "--gradebook", book, "--gradebook-columns", "exercise")  # fmt: skip
    rows = {line[0]: line for line in csv.reader(io.StringIO(book.read_text()))}
    assert rows["alice"][-4:] == ["1", "1", "6", "100"]
    assert rows["bob"][-3:] == ["0.5", "1.5", "25"]
    assert rows["carol"][-3] == ""  # not scored yet
    lines[2]["score"] = "2"
    with open(filled, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    status, _, err = run("report", graded / "all.jsonl", "--written-scores", filled)
    assert status == 2 and "line 4: score 2 is not between 0 and 1" in err


def test_similarity_finds_the_renamed_copy_and_not_the_shared_one_liners(graded):
    from attnlib.grade import similarity
    from attnlib.grade.report import merge

    found = similarity.pairs(merge([graded / "all.jsonl"]))
    assert [(Path(p["a"]).name, Path(p["b"]).name) for p in found] == [("alice", "carol")]
    assert [e[0] for e in found[0]["exercises"]] == ["rank_witness_general"]
    page = (graded / "one" / "similar.html").read_text()
    assert "alice and carol" in page and "coeffs = np.linalg.solve" in page
    assert "dave" not in page  # dave's one-line answers equal alice's, and count for nothing


def test_normalise_ignores_names_layout_and_comments():
    from attnlib.grade.similarity import normalise

    assert normalise("total = x+1  # sum\n") == normalise("s  =  y + 1")
    assert normalise("a = np.sqrt(b)") != normalise("a = np.exp(b)")


def test_the_slurm_array_scripts_shard_and_merge_to_the_single_run(graded, tmp_path):
    import os
    import subprocess

    from .conftest import ROOT

    env = dict(os.environ, CLASS=str(graded / "class"), SHARDS="3", OUT="results",
               ATTNLIB=str(Path(sys.executable).with_name("attnlib")))  # fmt: skip
    for i in (1, 2, 3):
        subprocess.run(["bash", ROOT / "deploy/slurm/grade.sbatch"], cwd=tmp_path, check=True,
                       env=env | {"SLURM_ARRAY_TASK_ID": str(i)})  # fmt: skip
    subprocess.run(["bash", ROOT / "deploy/slurm/merge.sbatch"], cwd=tmp_path, check=True, env=env)
    assert tree(tmp_path / "results" / "feedback") == tree(graded / "one" / "feedback")
    for name in ("grades.csv", "similarity.html"):
        ours = "grades.csv" if name == "grades.csv" else "similar.html"
        assert (tmp_path / "results" / name).read_bytes() == (graded / "one" / ours).read_bytes()
    single = run("report", "--json", graded / "all.jsonl")[1]
    assert same_class_report((tmp_path / "results" / "report.json").read_text(), single)


def test_the_kubernetes_indexed_job_runs_each_index_as_its_shard(graded, tmp_path):
    import subprocess

    import yaml

    from .conftest import ROOT

    job = yaml.safe_load((ROOT / "deploy/kubernetes/grade-job.yaml").read_text())
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["SHARDS"]) == job["spec"]["completions"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/class"]["readOnly"] is True
    script = container["args"][0]
    script = script.replace("/class/", f"{graded / 'class'}/").replace("/parts/", f"{tmp_path}/")
    assert env["ATTNLIB"] == "attnlib"  # the image's, on its PATH; a venv's by its path:
    attnlib = str(Path(sys.executable).with_name("attnlib"))  # here, not on PATH
    for index in (0, 1, 2):  # the pods of a 3-way job, one after the other
        subprocess.run(["sh", "-c", script], check=True, env={
            "PATH": "/usr/bin:/bin", "ATTNLIB": attnlib, "JOB_COMPLETION_INDEX": str(index),
            "SHARDS": "3", "LC_ALL": "C", "HOME": str(tmp_path)})  # fmt: skip
    parts = sorted(tmp_path.glob("part-*.jsonl"))
    assert [p.name for p in parts] == ["part-1.jsonl", "part-2.jsonl", "part-3.jsonl"]
    merged, single = (
        run("report", "--json", *parts)[1],
        run("report", "--json", graded / "all.jsonl")[1],
    )
    assert same_class_report(merged, single)
