"""The sandbox's limits and its fallback, files handed in (links, sparse files, odd names),
the report's own output (--output) and --resume.

Tests that need the sandbox are skipped where bubblewrap is missing or the grader is not
root; the fallback tests run everywhere (they point ATTNLIB_BWRAP at a missing program).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnlib.cli import main
from attnlib.grade import sandbox as sb

from .conftest import (
    IDS,
    LESSON,
    code,
    insert_after_setup,
    rows_of,
    sandbox_uid_processes,
    solved,
    unsolved,
    write,
)

NB = f"{LESSON}.ipynb"
needs_sandbox = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which(sb.bwrap_program()),
    reason="the separate-uid sandbox needs root and bubblewrap (CI has both)",
)


def grade_json(capsys, *args):
    status = main(["check", "--json", "-q", *map(str, args)])
    return status, json.loads(capsys.readouterr().out)


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).exists() else None


# ---- no sandbox: said in one line and in the JSON; --require-sandbox refuses ----------------


def test_without_bubblewrap_the_report_says_so_and_grading_still_agrees(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(sb.BWRAP_ENV, str(tmp_path / "no" / "bwrap"))
    path = write(tmp_path / "alice" / NB, solved())
    status = main(["check", "--json", str(path.parent)])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert status == 0 and report["all_passed"]
    assert report["sandbox"] is False
    assert report["sandbox_detail"].startswith("bubblewrap not found")
    said = [line for line in captured.err.splitlines() if "NO SANDBOX" in line]
    assert len(said) == 1 and "bubblewrap not found" in said[0]


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_require_sandbox_refuses_to_run_without_one(tmp_path, capsys, monkeypatch, flag):
    monkeypatch.setenv(sb.BWRAP_ENV, str(tmp_path / "no" / "bwrap"))
    write(tmp_path / "alice" / NB, solved())
    assert main(["check", "-q", "--require-sandbox", *flag, str(tmp_path / "alice")]) == 2
    captured = capsys.readouterr()
    assert "no sandbox can be made here (bubblewrap not found" in captured.err
    if flag:
        assert json.loads(captured.out)["all_passed"] is False


@needs_sandbox
def test_the_probe_runs_as_a_uid_this_run_leased(monkeypatch):
    """Another grader kills every process of its own uids after each notebook: a probe run
    as an unleased uid (another run's slot 0) could be killed, and the run lose its sandbox."""
    from attnlib.grade import make_sandbox
    from attnlib.selfcheck import registry

    seen = []
    real = sb.probe
    monkeypatch.setattr(sb, "probe", lambda box: seen.append(box.job(0)["uid"]) or real(box))
    other = sb.Sandbox(bwrap="bwrap", package="", installed="")
    other.lease(1)  # another grader holds the first free uid
    try:
        box, detail, folder = make_sandbox(registry, {}, slots=2)
        try:
            assert box is not None, detail
            assert seen == [box.uids[0]] and other.uids[0] not in box.uids
        finally:
            box.release()
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        other.release()


@needs_sandbox
def test_the_text_report_names_the_sandbox(tmp_path, capsys):
    write(tmp_path / "alice" / NB, b"")  # no kernel needed
    assert main(["check", "-q", str(tmp_path / "alice")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("sandbox: bubblewrap (")] != []


# ---- nothing a kernel writes persists --------------------------------------------------------

WRITER = """\
import os, site

home = os.path.expanduser("~")
for name in (".bashrc", ".ssh/authorized_keys", ".ipython/profile_default/startup/00-x.py",
             ".ipython/profile_default/ipython_kernel_config.py"):
    os.makedirs(os.path.dirname(os.path.join(home, name)), exist_ok=True)
    open(os.path.join(home, name), "w").write("import os  # planted\\n")
open("/tmp/planted", "w").write("x")
open("/dev/shm/planted", "w").write("x")
"""
READER = """\
import glob, os

home = os.path.expanduser("~")
found = [p for p in (".bashrc", ".ssh/authorized_keys", ".ipython/profile_default/startup/00-x.py",
                     ".ipython/profile_default/ipython_kernel_config.py")
         if os.path.exists(os.path.join(home, p))]
found += [p for p in ("/tmp/planted", "/dev/shm/planted") if os.path.exists(p)]
if found:
    raise RuntimeError(f"persisted: {found}")
"""
VENV_WRITES = """\
import site, sysconfig
errors = []
for path in (site.getsitepackages()[0] + "/zz_planted.pth",
             site.getsitepackages()[0] + "/sitecustomize.py",
             sysconfig.get_path("stdlib") + "/sitecustomize.py"):  # this Python's own stdlib
    try:
        open(path, "w").write("import os\\n")
    except OSError as err:
        errors.append(err.strerror)
if errors != ["Read-only file system"] * 3:
    raise RuntimeError(f"a write went through: {errors}")
"""


@needs_sandbox
def test_files_a_kernel_writes_do_not_persist_into_later_kernels_or_the_machine(tmp_path, capsys):
    import site

    host_home = Path.home()
    watched = [
        host_home / ".bashrc",
        host_home / ".ssh" / "authorized_keys",
        host_home / ".ipython/profile_default/startup/00-x.py",
        Path(site.getsitepackages()[0]) / "zz_planted.pth",
        Path(site.getsitepackages()[0]) / "sitecustomize.py",
    ]
    before = {p: digest(p) for p in watched}
    writer = insert_after_setup(unsolved(), code(WRITER), code(VENV_WRITES))
    write(tmp_path / "a_writer" / NB, writer)
    write(tmp_path / "b_reader" / NB, insert_after_setup(solved(), code(READER)))
    status, report = grade_json(capsys, "-j", "1", tmp_path / "a_writer", tmp_path / "b_reader")
    assert report["sandbox"] is True
    assert report["cell_errors"] == {}  # written in the writer's sandbox, gone for the reader
    reader = rows_of(report, tmp_path / "b_reader" / NB)
    assert {e: r["status"] for e, r in reader.items()} == dict.fromkeys(IDS, "passed")
    assert {p: digest(p) for p in watched} == before  # and nothing on the machine changed


# ipykernel 6 (Colab's 6.17.1 with jupyter_client 6.1.12) writes its connection file again at
# every start, as this cell does (jupyter_core's secure_write: remove it, create it 0600); in
# the sandbox that file is bwrap's, made as root: a start that cannot replace it fails
REWRITE_CONNECTION = f"""\
from ipykernel.kernelapp import IPKernelApp
from jupyter_client.connect import write_connection_file

app = IPKernelApp.instance()
assert app.abs_connection_file == "{sb.IPC}/kernel.json", app.abs_connection_file
ports = {{f"{{n}}_port": getattr(app, f"{{n}}_port") for n in ("shell", "iopub", "stdin", "control", "hb")}}
write_connection_file(
    app.abs_connection_file, ip=app.ip, key=app.session.key, transport=app.transport, **ports
)
"""


@needs_sandbox
def test_the_kernel_can_write_its_connection_file_again_as_ipykernel_6_does(tmp_path, capsys):
    write(tmp_path / "alice" / NB, insert_after_setup(solved(), code(REWRITE_CONNECTION)))
    status, report = grade_json(capsys, "--require-sandbox", tmp_path / "alice")
    assert report["sandbox"] is True
    assert report["cell_errors"] == {}
    found = rows_of(report, tmp_path / "alice" / NB)
    assert {e: r["status"] for e, r in found.items()} == dict.fromkeys(IDS, "passed")
    assert status == 0


PLANT = """\
import os
for folder in (".", os.path.expanduser("~"), "/tmp", "/dev/shm"):
    with open(os.path.join(folder, "planted_by_a"), "w") as f:
        f.write("a")
"""
LOOK = """\
import os, glob
seen = sorted(os.listdir("."))
planted = [p for p in ("~", "/tmp", "/dev/shm") for p in glob.glob(os.path.expanduser(p) + "/planted*")]
if seen != [{name!r}] or planted:
    raise RuntimeError(f"seen {{seen}}, planted {{planted}}")
"""


@needs_sandbox
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_kernel_started_ahead_sees_only_its_own_notebooks_files(tmp_path, capsys, jobs):
    """The next notebook's kernel starts while the last is judged and cleaned up: it must
    start empty and get its own notebook's files only (no classmate's, nothing left)."""
    names = [f"{LESSON}-{n}.ipynb" for n in range(1, 7)]  # matched by prefix: a name each
    folders = []
    for n, name in enumerate(names):
        nb = insert_after_setup(solved(), code(PLANT if n % 2 == 0 else LOOK.format(name=name)))
        folders.append(write(tmp_path / f"s{n}" / name, nb).parent)
    status, report = grade_json(capsys, "-j", jobs, *folders)
    assert report["sandbox"] is True
    assert report["cell_errors"] == {}
    assert {r["status"] for r in report["rows"]} == {"passed"}
    assert len(report["rows"]) == len(names) * len(IDS)
    assert sandbox_uid_processes(report["sandbox_uids"]) == []


# ---- limits: wall time and CPU ---------------------------------------------------------------


@needs_sandbox
def test_the_wall_time_kills_the_whole_sandbox(tmp_path, capsys):
    sleeper = "import subprocess, time\nsubprocess.Popen(['sleep', '600'])\ntime.sleep(60)"
    write(tmp_path / "sleeper" / NB, insert_after_setup(solved(), code(sleeper)))
    args = ["-j", "2", "--timeout", "120", "--wall-time", "10"]
    status, report = grade_json(capsys, *args, tmp_path / "sleeper")
    assert status == 1
    found = rows_of(report, tmp_path / "sleeper" / NB)
    assert "ran past its 10 s wall time; the sandbox was killed" in found["(notebook)"]["message"]
    assert [r["status"] for e, r in found.items() if e != "(notebook)"] == ["not reached"] * 5
    assert len(report["sandbox_uids"]) == 2 * 2  # two a slot (the next kernel starts ahead)
    assert sandbox_uid_processes(report["sandbox_uids"]) == []


@needs_sandbox
def test_the_cpu_memory_and_process_limits_are_set_in_the_kernel(tmp_path, capsys):
    shown = (
        "import resource\n"
        "limits = [resource.getrlimit(getattr(resource, f'RLIMIT_{n}'))[0]\n"
        "          for n in ('CPU', 'AS', 'NPROC', 'FSIZE')]\n"
        "if limits != [2, 3 * 2**30, 50, 2**28]:\n"
        "    raise ValueError(limits)"
    )
    burner = "while True:\n    pass"  # 2 CPU seconds, then SIGKILL at the hard limit
    nb = insert_after_setup(solved(), code(shown), code(burner))
    write(tmp_path / "burner" / NB, nb)
    args = ["--timeout", "120", "--cpu", "2", "--memory", str(3 * 2**30), "--processes", "50"]
    status, report = grade_json(capsys, *args, tmp_path / "burner")
    assert report["cell_errors"] == {}
    found = rows_of(report, tmp_path / "burner" / NB)
    assert "the kernel died in cell" in found["(notebook)"]["message"]
    assert sandbox_uid_processes(report["sandbox_uids"]) == []


# ---- files handed in: links, odd files, sparse files, names ----------------------------------


def test_links_odd_files_and_huge_files_are_reported_never_followed_nor_read(tmp_path, capsys):
    root = tmp_path / "class"
    secret = tmp_path / "secret.ipynb"
    secret.write_bytes(json.dumps(solved()).encode())
    secret.chmod(0o600)
    (root / "linker").mkdir(parents=True)
    (root / "linker" / NB).symlink_to(secret)
    (root / "good").mkdir()
    write(root / "good" / NB, b"")
    (root / "ghost").symlink_to(root / "good", target_is_directory=True)
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / NB)
    (root / "huge").mkdir()
    with open(root / "huge" / NB, "wb") as f:
        f.truncate(64 * 2**30)  # sparse: 64 GiB that take no disk
    (root / "beside").mkdir()
    write(root / "beside" / NB, b"")
    with open(root / "beside" / "data.bin", "wb") as f:
        f.truncate(64 * 2**30)
    before = sorted(str(p) for p in root.rglob("*"))
    folders = [root / n for n in ("beside", "fifo", "ghost", "good", "huge", "linker")]
    args = ["--data-file", "data.bin", "--no-sandbox", *folders]
    status, report = grade_json(capsys, *args)
    assert status == 1
    messages = {r["notebook"]: r["message"] for r in report["rows"]}
    assert "is a symbolic link (to " in messages[str(root / "linker" / NB)]
    assert "not followed, not graded" in messages[str(root / "ghost")]
    assert "not a regular file" in messages[str(root / "fifo" / NB)]
    assert "more than the 33554432 allowed" in messages[str(root / "huge" / NB)]
    assert "more than the 1048576 allowed" in report["not_read"][str(root / "beside" / "data.bin")]
    assert sorted(report["by_folder"]) == sorted(map(str, folders))  # every folder reported
    assert sorted(str(p) for p in root.rglob("*")) == before  # nothing written, no copy made
    assert (root / "linker" / NB).is_symlink() and oct(secret.stat().st_mode)[-3:] == "600"


BAD_NAMES = ["new\nline  score_eat_seeds  passed", "ansi\x1b[2K\x1b[1Aforged", "bytes\udcff\udcfe"]


@pytest.mark.parametrize("encoding", ["utf-8:strict", "ascii:strict"])
def test_any_file_name_is_escaped_and_the_report_survives_any_locale(tmp_path, encoding):
    folders = []
    for name in BAD_NAMES:
        folder = tmp_path / name
        write(folder / NB, b"")
        folders.append(str(folder))
    env = dict(os.environ, PYTHONIOENCODING=encoding, LC_ALL="C", LANG="C")
    done = subprocess.run(
        [sys.executable, "-m", "attnlib.cli", "check", "-q", "--no-sandbox", *folders],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr.decode(errors="replace")
    out = done.stdout.decode("ascii" if encoding.startswith("ascii") else "utf-8")
    assert "\x1b" not in out
    lines = out.splitlines()
    assert not any(line.startswith("line") for line in lines)  # the newline was escaped
    assert sum("new\\nline" in line for line in lines) == 3  # table, reason, folder summary
    assert sum("bytes\\xff\\xfe" in line for line in lines) == 3
    assert lines[-1].startswith("3 exercises in 3 notebooks")


# ---- the report's own output; --resume ------------------------------------------------------


def test_output_goes_to_the_file_the_grader_opens_and_nowhere_else(tmp_path, capsys):
    write(tmp_path / "alice" / NB, b"")
    target = tmp_path / "report.json"
    assert main(["check", "--json", "-q", "--output", str(target), str(tmp_path / "alice")]) == 1
    assert capsys.readouterr().out == ""
    assert json.loads(target.read_text())["summary"]["error"] == 1


def test_resume_keeps_verdicts_of_unchanged_notebooks_and_grades_changed_ones(
    tmp_path, capsys, monkeypatch
):
    from attnlib.grade import notebook

    alice = write(tmp_path / "alice" / NB, solved())
    bob = write(tmp_path / "bob" / NB, unsolved())
    first = tmp_path / "first.jsonl"
    folders = [str(alice.parent), str(bob.parent)]
    assert main(["check", "--jsonl", "-q", "--output", str(first), *folders]) == 1
    bob.write_text(json.dumps(solved()))  # bob hands in again: graded anew
    real, graded = notebook.run_in_kernel, []

    def counting(path, *args):
        graded.append(str(path))
        return real(path, *args)

    monkeypatch.setattr(notebook, "run_in_kernel", counting)
    assert main(["check", "--json", "-q", "--resume", str(first), *folders]) == 0
    report = json.loads(capsys.readouterr().out)
    assert graded == [str(bob)]  # alice was not run again
    assert {r["status"] for r in report["rows"]} == {"passed"}


@pytest.mark.parametrize("name", ["../secret", "sub/data.csv", ".."])
def test_a_data_file_must_be_a_plain_name(tmp_path, capsys, name):
    write(tmp_path / "alice" / NB, b"")
    assert main(["check", "-q", "--data-file", name, str(tmp_path / "alice")]) == 2
    assert "give a file name, not a path" in capsys.readouterr().err


def test_resume_and_output_cannot_be_the_same_file(tmp_path, capsys):
    write(tmp_path / "alice" / NB, b"")
    same = tmp_path / "run.jsonl"
    same.write_text("kept\n")
    args = ["check", "--jsonl", "--resume", str(same), "--output", str(same), str(tmp_path)]
    assert main(args) == 2
    assert "name the same file" in capsys.readouterr().err
    assert same.read_text() == "kept\n"


def test_a_course_and_venv_under_tmp_are_mounted_over_the_private_tmp(monkeypatch):
    # a CI clone often lives in /tmp: bwrap mounts in order, so the private /tmp must come
    # first and the venv and package binds after it, or the kernel finds no Python at all
    monkeypatch.setattr(sb, "python_paths", lambda: ["/usr", "/tmp/ci-clone/.venv"])
    box = sb.Sandbox(bwrap="bwrap", package="/tmp/pkg", installed="/tmp/ci-clone/attnlib")
    opts = box.options(uid=61000)
    pairs = list(zip(opts, opts[1:], opts[2:], strict=False))  # every window of three
    tmpfs = next(i for i, (a, b, _) in enumerate(pairs) if (a, b) == ("--tmpfs", "/tmp"))
    binds = [i for i, (a, _, c) in enumerate(pairs) if a == "--ro-bind" and c.startswith("/tmp/")]
    assert binds and all(i > tmpfs for i in binds)  # the venv and the package land on top


# ---- a save by the notebook's owner during the run is kept, where no kernel could write ------


def _grade_while_the_owner_saves(tmp_path, **options):
    """Grade one solved notebook; when it is done (before the run ends) its owner saves a
    newer version, as JupyterLab's autosave does. Return (report, the file's bytes after)."""
    from attnlib import grade

    path = write(tmp_path / "alice" / NB, solved())
    newer = path.read_bytes().replace(b'"cells"', b'"cells" ', 1)  # the owner's save

    def owner_saves(result, done, total):
        path.write_bytes(newer)

    report = grade.grade([str(path.parent)], on_result=owner_saves, **options)
    return report, path.read_bytes() == newer


@needs_sandbox
def test_in_the_sandbox_a_save_during_grading_is_kept(tmp_path):
    report, kept = _grade_while_the_owner_saves(tmp_path, require_sandbox=True)
    assert report["sandbox"] and report["all_passed"]
    assert kept and report["tampered"] == []


def test_attnlib_progress_keeps_a_save_during_grading_even_without_a_sandbox(tmp_path):
    report, kept = _grade_while_the_owner_saves(tmp_path, sandbox=False, restore_changed=False)
    assert kept and report["tampered"] == []


def test_without_a_sandbox_a_class_run_writes_back_what_changed(tmp_path):
    # a kernel could have written it: the grader's snapshot is what was handed in
    report, kept = _grade_while_the_owner_saves(tmp_path, sandbox=False)
    assert not kept and report["tampered"] == [str(tmp_path / "alice" / NB)]


def test_attnlib_progress_asks_the_grader_to_keep_saves(tmp_path, monkeypatch, capsys):
    from attnlib import grade

    real, seen = grade.grade, {}

    def recording(paths, **options):
        seen.update(options)
        return real(paths, **options)

    monkeypatch.setattr(grade, "grade", recording)
    write(tmp_path / "alice" / NB, solved())
    main(["progress", str(tmp_path / "alice")])
    assert seen.get("restore_changed") is False
