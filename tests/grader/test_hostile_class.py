"""A hostile class, graded once: every forgery, fault and attack of issues 10 and 18 is one
student's folder, beside honest students who answer in their own way.

Each test reads one student's rows from the same run. The whole class is graded with
``-j 2`` in the bubblewrap sandbox (the module is skipped where none can be made; the
fallback is tested in test_sandbox_fallback.py); afterwards every handed-in file must be
byte-identical and no process of a sandbox's uid may be left.

The ``prober`` student's notebook is a list of probe cells, each an attack that the
sandbox must stop: the test asserts that each probe cell raised the error it names (the
attack was refused), so without the sandbox these tests fail.
"""

import contextlib
import io
import json
import os
import re
import socket
import sys
import threading
import time

import pytest

from attnlib.cli import main
from attnlib.grade import sandbox as sb
from attnlib.selfcheck import check

from .conftest import (
    IDS,
    LESSON,
    ROOT,
    check_cells,
    code,
    digests,
    insert_after_setup,
    rows_of,
    sandbox_uid_processes,
    solved,
    src,
    unsolved,
    write,
)

JOBS = 2

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

child = subprocess.Popen(["sleep", "600"], start_new_session=True)
if os.fork() == 0:  # a daemon: new session, double fork, parent gone
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
os.wait()
"""
SLEEPERS = """\
import subprocess

started = 0
for _ in range(800):  # each sleeper in its own session, as a detached daemon would be
    try:
        subprocess.Popen(["sleep", "600"], start_new_session=True)
        started += 1
    except OSError as err:
        raise OSError(f"{err} after {started} sleepers") from None
"""
TRANSFORMER = """\
import re

def _answer_key(lines):  # rewrite every check(...) to send the expected value instead
    text = "".join(lines)
    text = re.sub(
        r'check\\("(\\w+)", .*\\)',
        r'from attnlib.selfcheck import registry\\ncheck("\\1", registry.get("\\1").expected)',
        text,
    )
    return text.splitlines(keepends=True)

get_ipython().input_transformers_post.append(_answer_key)
"""
OWN_FUNCTION = """\
def my_dependency(K):
    d_k = K.shape[-1]
    c = np.linalg.solve(K[:d_k].T, -K[d_k])
    return np.append(c, 1.0)


check("rank_witness_general", my_dependency)
"""
COMM_FLOOD = """\
from ipykernel.comm import Comm

comm = Comm(target_name="flood")
for _ in range(300):
    comm.send({"x": "y" * 1_000_000})
"""
FOREIGN_FLOOD = """\
kernel = get_ipython().kernel
for _ in range(300):  # stream messages under another request's header
    kernel.session.send(
        kernel.iopub_socket, "stream", {"name": "stdout", "text": "x" * 1_000_000},
        parent={"header": {"msg_id": "not-this-cell", "msg_type": "execute_request"}},
    )
"""


def with_cell_after(nb, exercise_id, cell):
    """``nb`` with ``cell`` right after the cell that checks ``exercise_id``."""
    nb = json.loads(json.dumps(nb))
    index = next(i for i in check_cells(nb) if f'"{exercise_id}"' in src(nb["cells"][i]))
    nb["cells"].insert(index + 1, cell)
    return nb


def replace_checks(nb, sources):
    """``nb`` with the check cell of each exercise in ``sources`` replaced by its source."""
    nb = json.loads(json.dumps(nb))
    for i in check_cells(nb):
        for exercise_id, source in sources.items():
            if f'check("{exercise_id}"' in src(nb["cells"][i]):
                nb["cells"][i]["source"] = source
    return nb


def probes(root, port, grader_pid):
    """``[(name, source, error it must raise), ...]``: each an attack the sandbox refuses."""
    site = next(p for p in sys.path if p.endswith("site-packages"))
    return [
        ("etc_shadow", "open('/etc/shadow').read()", "FileNotFoundError"),
        ("classmates", f"import os\nos.listdir({str(root)!r})", "FileNotFoundError"),
        (
            "solutions",
            f"open({str(ROOT / 'solutions' / (LESSON + '.ipynb'))!r}).read()",
            "FileNotFoundError",
        ),
        ("root_home", "import os\nos.listdir('/root')", "PermissionError"),
        ("registry", "from attnlib.selfcheck import registry", "ImportError"),
        ("mistakes", "from attnlib.selfcheck import mistakes", "ImportError"),
        ("checkers", "import attnlib.checkers.lesson_03", "ModuleNotFoundError"),
        ("judge", "from attnlib.selfcheck import judge", "ImportError"),
        (
            "grader_stdout",
            f"open('/proc/{grader_pid}/fd/1', 'w').write('{{}}\\n')",
            "FileNotFoundError",
        ),
        (
            "stop_grader",
            f"import os, signal\nos.kill({grader_pid}, signal.SIGSTOP)",
            "ProcessLookupError",
        ),
        (
            "stop_runner",
            "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)",
            "PermissionError",
        ),
        ("tmux", "import os\nos.environ['TMUX']", "KeyError"),
        ("instructor_env", "import os\nos.environ['ATTNLIB_INSTRUCTOR_SECRET']", "KeyError"),
        (
            "network",
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2)",
            "[Errno",
        ),
        ("venv_pth", f"open({site + '/zz_attnlib_attack.pth'!r}, 'w')", "Read-only file system"),
        ("sitecustomize", f"open({site + '/sitecustomize.py'!r}, 'w')", "Read-only file system"),
        (
            "package_wire",
            "import attnlib.selfcheck.wire as w\nopen(w.__file__, 'a')",
            "Permission denied",
        ),
        (
            "package_plant",
            "import attnlib, os\nopen(os.path.join(attnlib.__path__[0], 'checkers', 'zz.py'), 'w')",
            "Read-only file system",
        ),
        (
            "kernel_files",
            "import glob\n"
            "found = [f for f in glob.glob('/tmp/**/kernel*.json', recursive=True)"
            " + glob.glob('/run/**/kernel*.json', recursive=True)"
            " + glob.glob('/root/.local/share/jupyter/runtime/*.json')"
            " if f != '/run/kernel/kernel.json']\n"
            "if not found:\n    raise LookupError('no other kernel to attack')\n"
            "print(found)",
            "LookupError",
        ),
        (
            "classmate_workdirs",
            "import glob\n"
            "if not glob.glob('/tmp/attnlib-*'):\n    raise LookupError('no working folder')",
            "LookupError",
        ),
        ("sparse_64_gib", "open('/tmp/big', 'wb').truncate(64 * 2**30)", "File too large"),
        ("memory_bomb", "x = bytearray(4 * 2**30)", "MemoryError"),
        ("sleepers", SLEEPERS, "Resource temporarily unavailable"),  # last: uses up processes
    ]


def build_class(root, port, grader_pid):
    """One folder per student; returns {student: notebook path}."""
    answers = solved()
    stored = [out for i in check_cells(answers) for out in answers["cells"][i]["outputs"]]
    assert any("attnlib_check" in out.get("metadata", {}) for out in stored)
    notebooks = {}

    def hand_in(student, nb, name=f"{LESSON}.ipynb"):
        notebooks[student] = write(root / student / name, nb)

    hand_in("good", solved())
    # honest students: the notebook's check() and the grader judge the same answers
    hand_in(
        "honest_own_names",
        replace_checks(
            solved(),
            {
                "score_eat_seeds": 'mine = 2 * 2 + 1 * 1\ncheck("score_eat_seeds", mine)',
                "rank_witness": "w = [-1 / 2, -1 / 2, 1]\n"
                'check(exercise_id="rank_witness", answer=w)',
                "rank_witness_general": OWN_FUNCTION,
                # an inline function (the check judges results, so any correct one passes)
                "scores_loop": 'check("scores_loop", lambda Q, K: 1.0 * Q @ (1.0 * K).T)',
                "double_keys": 'check("double_keys", "doubled")',
            },
        ),
    )
    records = 'check("scores_loop", [{"ok": np.array([[5.0, 4.0], [3.0, 2.0]])}])'
    hand_in(
        "honest_records",
        replace_checks(solved(), {"scores_loop": records, "double_keys": '# check("double_keys")'}),
    )
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
    hand_in("input_transformer", insert_after_setup(unsolved(), code(TRANSFORMER)))
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
    plant = (
        "import os\n"
        "os.makedirs('attnlib/selfcheck', exist_ok=True)\n"
        "open('attnlib/__init__.py', 'w').write('')\n"
        "open('attnlib/selfcheck/__init__.py', 'w').write("
        "'def check(*a, **k):\\n    return None\\n')\n"
        "for name in list(__import__('sys').modules):\n"
        "    if name.startswith('attnlib'):\n"
        "        del __import__('sys').modules[name]\n"
        "from attnlib.selfcheck import check"
    )
    hand_in("planted_package", insert_after_setup(solved(), code(plant)))
    prober = unsolved()
    prober["cells"] += [code(source) for _, source, _ in probes(root, port, grader_pid)]
    hand_in("prober", prober)
    hand_in("daemons", insert_after_setup(unsolved(), code(DAEMONS)))
    kill_runner = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
    daemon_then_kill = code(DAEMONS + "\n" + kill_runner)
    hand_in("kills_its_runner", with_cell_after(solved(), "score_eat_seeds", daemon_then_kill))
    stop_all = code(
        "import contextlib, os, signal\n"
        "with contextlib.suppress(OSError):\n"
        "    os.kill(-1, signal.SIGSTOP)  # every process it may signal but itself\n"
        "os.kill(os.getpid(), signal.SIGSTOP)"
    )
    hand_in("stops_everything", with_cell_after(solved(), "score_eat_seeds", stop_all))
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
            "display({'application/vnd.attnlib.answer+json': {'exercise': 'rank_witness',"
            " 'data': '{\"array\": [1]}'}}, raw=True)\n"
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
                f"os.remove({LESSON + '.ipynb'!r})\n"
                "shutil.rmtree(os.getcwd())\n"
                f"os.remove({str(deletes)!r})"
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
    hand_in("comm_flood", with_cell_after(solved(), "score_eat_seeds", code(COMM_FLOOD)))
    hand_in("foreign_flood", with_cell_after(solved(), "score_eat_seeds", code(FOREIGN_FLOOD)))
    return notebooks


class Sampler(threading.Thread):
    """Counts the processes of sandbox uids while the class is graded."""

    def __init__(self):
        super().__init__(daemon=True)
        self.most, self.done = 0, threading.Event()

    def run(self):
        uids = range(sb.FIRST_UID, sb.FIRST_UID + sb.UID_RANGE)
        while not self.done.is_set():
            self.most = max(self.most, len(sandbox_uid_processes(uids)))
            time.sleep(0.2)


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the separate-uid sandbox needs root (CI runs as root)")
    box = sb.Sandbox(bwrap=sb.bwrap_program(), package="/nonexistent", installed="/nonexistent")
    if not os.path.exists(box.bwrap) and not __import__("shutil").which(box.bwrap):
        pytest.skip("bubblewrap is not installed: the fallback is tested on its own")
    root = tmp_path_factory.mktemp("handed_in")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    notebooks = build_class(root, listener.getsockname()[1], os.getpid())
    before = digests(root)
    out, err = io.StringIO(), io.StringIO()
    folders = sorted(str(p) for p in root.iterdir())
    args = ["check", "--json", "-j", str(JOBS), "--timeout", str(CELL_TIMEOUT)]
    args += ["--output-cap", str(OUTPUT_CAP), "--require-sandbox", *folders]
    secrets = {"TMUX": "/tmp/tmux-0/default,1,0", "ATTNLIB_INSTRUCTOR_SECRET": "s3cret"}
    saved = {k: os.environ.get(k) for k in secrets}
    os.environ.update(secrets)
    sampler = Sampler()
    sampler.start()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(args)
    finally:
        sampler.done.set()
        sampler.join()
        listener.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    report = json.loads(out.getvalue())
    return {
        "status": status,
        "report": report,
        "stderr": err.getvalue(),
        "notebooks": notebooks,
        "root": root,
        "before": before,
        "after": digests(root),
        "most_processes": sampler.most,
        "left": sandbox_uid_processes(report["sandbox_uids"]),
    }


def rows(graded, student):
    return rows_of(graded["report"], graded["notebooks"][student])


def statuses(graded, student):
    return {exercise: r["status"] for exercise, r in rows(graded, student).items()}


def passes(graded, student):
    return [e for e, status in statuses(graded, student).items() if status == "passed"]


def cell_errors(graded, student):
    """{cell number: reason} of one student's notebook."""
    found = graded["report"]["cell_errors"].get(str(graded["notebooks"][student]), [])
    return dict(map(tuple, found))


# ---- the class as a whole ------------------------------------------------------------------


def test_the_class_ran_in_the_sandbox(graded):
    assert graded["report"]["sandbox"] is True
    assert "bubblewrap" in graded["report"]["sandbox_detail"]
    # two uids a slot: its next kernel starts under one while the last is cleaned up
    assert len(set(graded["report"]["sandbox_uids"])) == 2 * JOBS


def test_every_handed_in_file_is_byte_identical_and_nothing_was_written(graded):
    assert graded["after"] == graded["before"]
    assert graded["report"]["tampered"] == []  # nothing needed restoring: nothing reached them


def test_no_process_a_notebook_started_survives_the_grading(graded):
    assert graded["most_processes"] >= 3  # kernels, sleepers and daemons ran meanwhile
    assert graded["left"] == []


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


# ---- honest students: the grader agrees with the notebook's check() -------------------------


def test_own_names_inline_answers_keywords_and_renamed_functions_pass(graded):
    assert statuses(graded, "honest_own_names") == dict.fromkeys(IDS, "passed")


def test_a_list_of_records_for_a_function_is_refused_as_check_refuses_it(graded):
    found = rows(graded, "honest_records")
    ours = check("scores_loop", [{"ok": [[5.0, 4.0], [3.0, 2.0]]}], quiet=True)
    assert not ours.passed
    assert found["scores_loop"]["status"] == ours.status
    assert "expected a function" in found["scores_loop"]["message"]


def test_an_exercise_never_passed_to_check_is_not_attempted(graded):
    found = rows(graded, "honest_records")
    assert found["double_keys"]["status"] == "not attempted"
    assert found["score_eat_seeds"]["status"] == "passed"


# ---- forgeries: none of them passes an unsolved exercise -----------------------------------


def test_stored_outputs_in_an_extra_empty_cell_count_for_nothing(graded):
    assert statuses(graded, "stored_outputs") == dict.fromkeys(IDS, "not attempted")


def test_skip_tagged_check_cells_with_copied_outputs_are_run_anyway(graded):
    assert statuses(graded, "skip_tagged") == dict.fromkeys(IDS, "not attempted")


def test_a_hand_made_display_record_counts_for_nothing(graded):
    assert statuses(graded, "display_record") == dict.fromkeys(IDS, "not attempted")


def test_the_answer_key_cannot_be_imported_so_patching_it_changes_nothing(graded):
    found = rows(graded, "patched")
    assert {e: r["status"] for e, r in found.items()} == {
        "score_eat_seeds": "not attempted",
        "rank_witness": "wrong",
        "rank_witness_general": "not attempted",
        "scores_loop": "not attempted",
        "double_keys": "not attempted",
    }
    assert found["rank_witness"]["mistake"] == "trivial_witness"
    assert "ImportError" in " ".join(cell_errors(graded, "patched").values())


def test_patching_builtins_bool_in_the_kernel_passes_nothing(graded):
    assert list(rows(graded, "patched_bool")) == IDS
    assert passes(graded, "patched_bool") == []


def test_writing_into_expected_arrays_in_the_kernel_does_not_make_a_wrong_answer_pass(graded):
    assert statuses(graded, "wrote_expected")["rank_witness"] == "wrong"


def test_writing_into_the_example_arrays_does_not_fail_a_right_answer(graded):
    assert statuses(graded, "wrote_example") == dict.fromkeys(IDS, "passed")


def test_an_input_transformer_that_sends_the_answer_key_passes_nothing(graded):
    assert passes(graded, "input_transformer") == []
    assert "ImportError" in " ".join(cell_errors(graded, "input_transformer").values())


def test_a_planted_attnlib_package_in_the_working_folder_passes_nothing(graded):
    assert statuses(graded, "planted_package") == dict.fromkeys(IDS, "not attempted")


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


def test_a_classmates_file_cannot_even_be_reached(graded):
    victim = str(graded["notebooks"]["good"])
    assert statuses(graded, "good") == dict.fromkeys(IDS, "passed")
    assert graded["after"][victim] == graded["before"][victim]
    assert "FileNotFoundError" in " ".join(cell_errors(graded, "classmate").values())


# ---- attacks on the machine, the grader and classmates: each probe cell is refused ----------


@pytest.mark.parametrize("index", range(23))
def test_every_probe_of_the_machine_is_refused(graded, index):
    name, _, error = probes(graded["root"], 0, 0)[index]
    nb = json.loads(graded["notebooks"]["prober"].read_text())
    number = len(nb["cells"]) - 23 + index + 1  # the probe cells are the last ones
    raised = cell_errors(graded, "prober").get(number)
    assert raised is not None, f"probe {name} was not refused (cell {number} raised nothing)"
    assert error in raised, f"probe {name}: {raised}"


def test_the_prober_passes_nothing_and_every_folder_is_reported(graded):
    assert passes(graded, "prober") == []
    assert len(probes(graded["root"], 0, 0)) == 23


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


def test_a_notebook_cannot_signal_its_runner_and_its_daemons_die_with_it(graded):
    assert statuses(graded, "kills_its_runner") == dict.fromkeys(IDS, "passed")
    assert "PermissionError" in " ".join(cell_errors(graded, "kills_its_runner").values())
    assert cell_errors(graded, "daemons") == {}  # they started, and none is left (above)


def test_a_malformed_record_and_fake_frames_change_nothing(graded):
    found = rows(graded, "malformed_record")
    assert passes(graded, "malformed_record") == []
    assert found["rank_witness"]["status"] == "error"
    assert "malformed answer data" in found["rank_witness"]["message"]


def test_a_notebook_that_deletes_files_is_graded_and_no_handed_in_file_changes(graded):
    assert statuses(graded, "deletes_files") == dict.fromkeys(IDS, "passed")
    assert graded["report"]["tampered"] == []


@pytest.mark.parametrize(
    "student, reason",
    [
        ("kernel_dies", "the kernel died in cell"),
        ("endless_loop", f"ran past the {CELL_TIMEOUT} s limit per cell"),
        ("stops_everything", f"ran past the {CELL_TIMEOUT} s limit per cell"),
        ("output_flood", f"printed more than the {OUTPUT_CAP} bytes allowed"),
        ("comm_flood", f"printed more than the {OUTPUT_CAP} bytes allowed"),
        ("foreign_flood", f"printed more than the {OUTPUT_CAP} bytes allowed"),
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
