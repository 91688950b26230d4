"""A hostile class, graded once: every forgery and fault of issue 10 is one student's folder.

Each test reads one student's rows from the same run. The whole class is graded with
``-j 2``; afterwards every handed-in file must be byte-identical and every process a
notebook started (its kernel included) must be gone.
"""

import contextlib
import io
import json
import re

import pytest

from attnlib.cli import main

from .conftest import (
    IDS,
    LESSON,
    alive,
    check_cells,
    code,
    digests,
    insert_after_setup,
    pid_cell,
    pids_in,
    rows_of,
    solved,
    src,
    unsolved,
    write,
)

CELL_TIMEOUT = 15  # seconds; the hostile endless loop costs this much
OUTPUT_CAP = 2_000_000

FORGED_RECORDS = "\n".join(
    [
        "from IPython.display import display",
        "",
        f"for i in {IDS!r}:",
        "    record = {'exercise': i, 'status': 'passed', 'mistake': None,",
        "              'message': f'✓ {i}: correct.'}",
        "    display({'text/plain': f'✓ {i}: correct.'}, raw=True,",
        "            metadata={'attnlib_check': record})",
    ]
)
PATCHES = """\
import numpy as np

from attnlib.selfcheck import registry

np.isclose = lambda *args, **kwargs: np.True_
np.allclose = lambda *args, **kwargs: True
np.array_equal = lambda *args, **kwargs: True
for exercise in registry.exercises().values():
    try:
        passed = exercise.judge(exercise.expected)
        object.__setattr__(exercise, "judge", lambda answer, passed=passed: passed)
    except Exception:
        pass
"""
PATCH_BOOL = """\
import builtins

builtins.bool = lambda *args: True
"""
WRITE_EXPECTED = """\
import numpy as np

from attnlib import example
from attnlib.selfcheck import registry

for name in ("X", "W_Q", "W_K"):
    try:
        getattr(example, name).setflags(write=True)
        getattr(example, name)[:, :2] *= 10
    except ValueError:
        pass
exercise = registry.get("rank_witness")
try:
    exercise.expected.setflags(write=True)
    exercise.expected[...] = 0.0
except ValueError:
    object.__setattr__(exercise, "expected", np.zeros(3))
"""
WRITE_EXAMPLE = """\
from attnlib import example

try:
    example.X.setflags(write=True)
    example.X[:, :2] *= 10
except ValueError:
    pass
"""
DAEMONS = """\
import os
import subprocess
import time

pids = open({pids!r}, "a")
child = subprocess.Popen(["sleep", "600"], start_new_session=True)
pids.write(f"{{child.pid}}\\n")
read_end, write_end = os.pipe()
if os.fork() == 0:  # a daemon: new session, double fork, parent gone
    os.setsid()
    if os.fork() == 0:
        os.write(write_end, str(os.getpid()).encode())
        time.sleep(600)
    os._exit(0)
os.wait()
pids.write(os.read(read_end, 32).decode() + "\\n")
pids.close()
"""


def with_cell_after(nb, exercise_id, cell):
    """``nb`` with ``cell`` right after the cell that checks ``exercise_id``."""
    nb = json.loads(json.dumps(nb))
    index = next(i for i in check_cells(nb) if f'"{exercise_id}"' in src(nb["cells"][i]))
    nb["cells"].insert(index + 1, cell)
    return nb


def build_class(root, pid_file, spawned):
    """One folder per student; returns {student: notebook path}."""
    answers = solved()
    stored = [out for i in check_cells(answers) for out in answers["cells"][i]["outputs"]]
    assert any("attnlib_check" in out.get("metadata", {}) for out in stored)
    notebooks = {}

    def hand_in(student, nb, name=f"{LESSON}.ipynb"):
        if isinstance(nb, dict):
            nb = insert_after_setup(nb, pid_cell(pid_file))
        notebooks[student] = write(root / student / name, nb)

    hand_in("good", solved())
    # forgeries: nothing stored in the file can count
    hand_in(
        "stored_outputs", {**unsolved(), "cells": [*unsolved()["cells"], code("", outputs=stored)]}
    )
    skip = unsolved()
    for i in check_cells(skip):
        skip["cells"][i]["metadata"]["tags"] = ["skip-execution", "nbval-skip"]
        skip["cells"][i]["outputs"] = answers["cells"][i]["outputs"]
    hand_in("skip_tagged", skip)
    forged = unsolved()
    forged["cells"].append(code(FORGED_RECORDS))  # after the real checks: the last record won
    hand_in("display_record", forged)
    patched = insert_after_setup(unsolved(), code(PATCHES))
    for i in check_cells(patched):
        if '"rank_witness"' in src(patched["cells"][i]):
            patched["cells"][i]["source"] = 'z = [0, 0, 0]\ncheck("rank_witness", z)'
    hand_in("patched", patched)
    hand_in("patched_bool", insert_after_setup(unsolved(), code(PATCH_BOOL)))
    wrote = insert_after_setup(unsolved(), code(WRITE_EXPECTED))
    for i in check_cells(wrote):
        if '"rank_witness"' in src(wrote["cells"][i]):
            wrote["cells"][i]["source"] = 'z = np.zeros(3)\ncheck("rank_witness", z)'
    hand_in("wrote_expected", wrote)
    hand_in("wrote_example", insert_after_setup(solved(), code(WRITE_EXAMPLE)))
    deleted = solved()
    deleted["cells"] = [
        c
        for i, c in enumerate(deleted["cells"])
        if i not in check_cells(deleted) or '"rank_witness"' in src(c)
    ]
    hand_in("deleted_checks", deleted)
    invented = unsolved()
    invented["cells"].append(code('check("made_up_id", 1)\ncheck("softmax", 2)'))
    hand_in("invented_ids", invented)
    other = {**unsolved(), "cells": [code("print('a pandas course')")]}
    hand_in("other_course", other, name="01_pandas_intro.ipynb")
    (root / "empty").mkdir()
    victim = root / "good" / f"{LESSON}.ipynb"
    hand_in(
        "classmate",
        insert_after_setup(unsolved(), code(f"open({str(victim)!r}, 'w').write('{{}}')")),
    )
    hand_in("daemons", insert_after_setup(unsolved(), code(DAEMONS.format(pids=str(spawned)))))
    kill_runner = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
    daemon_then_kill = code(DAEMONS.format(pids=str(spawned)) + "\n" + kill_runner)
    hand_in("kills_its_runner", with_cell_after(solved(), "score_eat_seeds", daemon_then_kill))
    # faults: each is an error row for its notebook, and the rest of the class is graded
    hand_in("invalid_json", b'{"cells": [')
    hand_in("zero_bytes", b"")
    hand_in("not_a_notebook", b"\x89PNG\r\n\x1a\n not json at all")
    hand_in("json_list", b"[1, 2, 3]")
    malformed = unsolved()
    malformed["cells"].append(
        code(
            "from IPython.display import display\n"
            "display({'text/plain': 'x'}, raw=True, metadata={'attnlib_check': 'garbage'})\n"
            "print('@@' + '0' * 32 + '@@' + '{\"ok\": \"1\"}' + '@@' + '0' * 32 + '@@')"
        )
    )
    hand_in("malformed_record", malformed)
    deletes = root / "deletes_files" / f"{LESSON}.ipynb"
    hand_in(
        "deletes_files",
        with_cell_after(
            solved(),
            "rank_witness",
            code(
                "import os, shutil\n"
                f"os.remove({str(deletes)!r})\n"
                f"os.remove({LESSON + '.ipynb'!r})\n"
                "shutil.rmtree(os.getcwd())"
            ),
        ),
    )
    hand_in(
        "kernel_dies", with_cell_after(solved(), "score_eat_seeds", code("import os\nos._exit(3)"))
    )
    endless = "while True:\n    try:\n        pass\n    except BaseException:\n        pass"
    hand_in("endless_loop", with_cell_after(solved(), "score_eat_seeds", code(endless)))
    flood = f"for _ in range(50):\n    print('x' * {OUTPUT_CAP // 10})"
    hand_in("output_flood", with_cell_after(solved(), "score_eat_seeds", code(flood)))
    return notebooks


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("handed_in")
    pid_file, spawned = root.parent / "kernels.txt", root.parent / "spawned.txt"
    notebooks = build_class(root, pid_file, spawned)
    before = digests(root)
    out, err = io.StringIO(), io.StringIO()
    folders = sorted(str(p) for p in root.iterdir())
    args = ["check", "--json", "-j", "2", "--timeout", str(CELL_TIMEOUT)]
    args += ["--output-cap", str(OUTPUT_CAP), *folders]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return {
        "status": status,
        "report": json.loads(out.getvalue()),
        "stderr": err.getvalue(),
        "notebooks": notebooks,
        "root": root,
        "before": before,
        "after": digests(root),
        "kernels": pids_in(pid_file),
        "spawned": pids_in(spawned),
    }


def rows(graded, student):
    return rows_of(graded["report"], graded["notebooks"][student])


def statuses(graded, student):
    return {exercise: r["status"] for exercise, r in rows(graded, student).items()}


# ---- the class as a whole ------------------------------------------------------------------


def test_every_handed_in_file_is_byte_identical_afterwards(graded):
    assert graded["after"] == graded["before"]


def test_no_process_a_notebook_started_survives_the_grading(graded):
    assert len(graded["kernels"]) >= 15  # the kernels of the notebooks that ran
    assert len(graded["spawned"]) == 4  # twice a sleep in its own session and a daemon
    assert [pid for pid in graded["kernels"] + graded["spawned"] if alive(pid)] == []


def test_the_class_exits_1_with_one_summary_per_folder_even_empty(graded):
    assert graded["status"] == 1
    by_folder = graded["report"]["by_folder"]
    assert sorted(by_folder) == sorted(str(p) for p in graded["root"].iterdir())
    assert by_folder[str(graded["root"] / "empty")] == {
        "passed": 0,
        "wrong": 0,
        "not attempted": 0,
        "missing": 0,
        "not reached": 0,
        "error": 0,
        "total": 0,
        "notebooks": 0,
    }


def test_progress_is_one_line_per_notebook_on_stderr(graded):
    lines = graded["stderr"].splitlines()
    assert len(lines) == len(graded["notebooks"])
    assert all(re.match(r"\[\d+/\d+\] \S+\.ipynb: \d+ of \d+ rows? passed", line) for line in lines)


def test_the_control_student_passes_everything(graded):
    assert statuses(graded, "good") == dict.fromkeys(IDS, "passed")


# ---- forgeries: none of them passes an unsolved exercise -----------------------------------


def test_stored_outputs_in_an_extra_empty_cell_count_for_nothing(graded):
    assert statuses(graded, "stored_outputs") == dict.fromkeys(IDS, "not attempted")


def test_skip_tagged_check_cells_with_copied_outputs_are_run_anyway(graded):
    assert statuses(graded, "skip_tagged") == dict.fromkeys(IDS, "not attempted")


def test_a_hand_made_display_record_counts_for_nothing(graded):
    assert statuses(graded, "display_record") == dict.fromkeys(IDS, "not attempted")


def test_monkeypatching_numpy_builtins_and_the_registry_in_the_kernel_changes_nothing(graded):
    found = rows(graded, "patched")
    assert {e: r["status"] for e, r in found.items()} == {
        "score_eat_seeds": "not attempted",
        "rank_witness": "wrong",
        "rank_witness_general": "not attempted",
        "scores_loop": "not attempted",
        "double_keys": "not attempted",
    }
    assert found["rank_witness"]["mistake"] == "trivial_witness"


def test_patching_builtins_bool_in_the_kernel_passes_nothing(graded):
    found = rows(graded, "patched_bool")
    assert list(found) == IDS
    assert [r["status"] for r in found.values() if r["status"] == "passed"] == []


def test_writing_into_expected_arrays_in_the_kernel_does_not_make_a_wrong_answer_pass(graded):
    assert statuses(graded, "wrote_expected")["rank_witness"] == "wrong"


def test_writing_into_the_example_arrays_does_not_fail_a_right_answer(graded):
    assert statuses(graded, "wrote_example") == dict.fromkeys(IDS, "passed")


def test_deleted_check_cells_are_missing_not_one_of_one_passed(graded):
    found = rows(graded, "deleted_checks")
    assert {e: r["status"] for e, r in found.items()} == {
        "score_eat_seeds": "missing",
        "rank_witness": "passed",
        "rank_witness_general": "missing",
        "scores_loop": "missing",
        "double_keys": "missing",
    }
    assert 'no cell calls check("double_keys", ...)' in found["double_keys"]["message"]


def test_invented_ids_are_ignored_and_listed(graded):
    assert statuses(graded, "invented_ids") == dict.fromkeys(IDS, "not attempted")
    listed = graded["report"]["unknown_ids"][str(graded["notebooks"]["invented_ids"])]
    assert listed == ["made_up_id", "softmax"]


def test_another_courses_notebook_is_one_error_row(graded):
    found = rows(graded, "other_course")
    assert list(found) == ["(notebook)"]
    assert found["(notebook)"]["status"] == "error"
    assert (
        "not a course notebook: no lesson is called 01_pandas_intro"
        in (found["(notebook)"]["message"])
    )


def test_rewriting_a_classmates_file_changes_neither_her_verdicts_nor_her_file(graded):
    victim = str(graded["notebooks"]["good"])
    assert statuses(graded, "good") == dict.fromkeys(IDS, "passed")  # graded from the snapshot
    assert victim in graded["report"]["tampered"]  # reported, and written back
    assert graded["after"][victim] == graded["before"][victim]


# ---- faults: an error row for that notebook, the rest graded -------------------------------


@pytest.mark.parametrize(
    "student, reason",
    [
        ("invalid_json", "not gradable: the file is not valid JSON"),
        ("zero_bytes", "not gradable: the file is empty (0 bytes)"),
        ("not_a_notebook", "not gradable: the file is not UTF-8 text"),
        ("json_list", "not gradable: the file is JSON but not a notebook"),
    ],
)
def test_a_broken_file_is_one_error_row(graded, student, reason):
    found = rows(graded, student)
    assert list(found) == ["(notebook)"]
    assert found["(notebook)"]["status"] == "error"
    assert found["(notebook)"]["message"].startswith(reason)


def test_a_notebook_that_kills_its_runner_keeps_what_it_earned_and_leaves_nothing(graded):
    found = rows(graded, "kills_its_runner")
    assert {e: r["status"] for e, r in found.items()} == {
        **{e: "not reached" for e in IDS},
        "score_eat_seeds": "passed",
        "(notebook)": "error",
    }
    assert "the kernel's runner was killed (exit status -9)" in found["(notebook)"]["message"]


def test_a_malformed_record_and_fake_frames_change_nothing(graded):
    assert statuses(graded, "malformed_record") == dict.fromkeys(IDS, "not attempted")


def test_a_notebook_that_deletes_files_is_graded_and_its_file_restored(graded):
    assert statuses(graded, "deletes_files") == dict.fromkeys(IDS, "passed")
    assert str(graded["notebooks"]["deletes_files"]) in graded["report"]["tampered"]


@pytest.mark.parametrize(
    "student, reason",
    [
        ("kernel_dies", "the kernel died in cell"),
        ("endless_loop", f"ran past the {CELL_TIMEOUT} s limit per cell"),
        ("output_flood", f"printed more than the {OUTPUT_CAP} bytes allowed"),
    ],
)
def test_verdicts_before_a_stop_are_kept_and_the_rest_not_reached(graded, student, reason):
    found = rows(graded, student)
    assert {e: r["status"] for e, r in found.items()} == {
        "score_eat_seeds": "passed",
        "rank_witness": "not reached",
        "rank_witness_general": "not reached",
        "scores_loop": "not reached",
        "double_keys": "not reached",
        "(notebook)": "error",
    }
    assert reason in found["(notebook)"]["message"]
    assert reason in found["rank_witness"]["message"]
