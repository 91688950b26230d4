"""Limits a notebook cannot outgrow: its socket folder, its messages, its memory, CPU share
and processes, all per notebook (issue 27).

Each test grades a small class with the real grader (``attnlib check``, bubblewrap, root,
cgroups where the machine has them) beside an honest classmate, and asserts what every
attack must leave: no pass it did not earn, the classmate graded as alone (and not slowed
past a bound), and nothing left behind (no process, no control group, nothing on disk).
"""

import contextlib
import io
import json
import os
import shutil
import socket
import threading
import time

import pytest

from attnlib.cli import main
from attnlib.grade import limits as cg
from attnlib.grade import sandbox as sb

from .conftest import IDS, LESSON, code, rows_of, sandbox_uid_processes, solved, unsolved, write


@pytest.fixture(scope="module")
def sandboxed():
    if os.geteuid() != 0:
        pytest.skip("the sandbox's uids need root (CI runs as root)")
    if not shutil.which(sb.bwrap_program()):
        pytest.skip("bubblewrap is not installed")


@pytest.fixture(scope="module")
def cgroups_here(sandboxed):
    run, reason = cg.make(sb.MEMORY, sb.PROCESSES)
    if run is None:
        pytest.skip(f"no cgroups here: {reason}")
    return run


def grade_class(folders, *args):
    """``(exit status, report)`` of ``attnlib check --json`` in the sandbox."""
    out = io.StringIO()
    argv = ["check", "--json", "-q", "--require-sandbox", *map(str, args), *map(str, folders)]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return status, json.loads(out.getvalue())


def our_groups():
    """Control groups of this process's runs that still exist."""
    mine = f"{cg.PREFIX}{os.getpid()}-"
    if os.path.exists(os.path.join(cg.ROOT, "cgroup.controllers")):
        parents = [cg.ROOT]
    else:
        own = cg.own_groups()
        parents = [os.path.join(cg.ROOT, c) + own.get(c, "/") for c in cg.V1]
    found = []
    for parent in parents:
        if os.path.isdir(parent):
            found += [n for n in os.listdir(parent) if n.startswith(mine)]
    return found


def attack(*sources):
    """The unsolved notebook with ``sources`` as its last cells: nothing to pass."""
    nb = unsolved()
    nb["cells"] += [code(s) for s in sources]
    return nb


def cell_errors(report, notebook):
    return dict(map(tuple, report["cell_errors"].get(str(notebook), [])))


def assert_nothing_left(report):
    assert sandbox_uid_processes(report["sandbox_uids"]) == []
    assert our_groups() == []


def assert_honest_and_no_pass(report, honest, attacker):
    assert {e: r["status"] for e, r in rows_of(report, honest).items()} == dict.fromkeys(
        IDS, "passed"
    )
    assert [e for e, r in rows_of(report, attacker).items() if r["status"] == "passed"] == []


class Sampler(threading.Thread):
    """Calls ``probe()`` every ``every`` seconds while a class is graded; keeps each value."""

    def __init__(self, probe, every=0.02):
        super().__init__(daemon=True)
        self.probe, self.every, self.values, self.done = probe, every, [], threading.Event()

    def run(self):
        while not self.done.is_set():
            self.values.append(self.probe())
            time.sleep(self.every)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()


# ---- the socket folder ----------------------------------------------------------------------

FILL = """\
import os
chunk = b"x" * 2**26
written = 0
try:
    for n in range(22):  # 1.4 GiB, in files below the file-size limit
        with open(f"/run/kernel/fill{n}", "wb") as f:
            f.write(chunk)
        written += len(chunk)
except OSError as err:
    raise OSError(f"{err.strerror} after {written} bytes") from None
"""
MANY_FILES = """\
import os
made = 0
try:
    for n in range(200_000):
        os.close(os.open(f"/run/kernel/f{n}", os.O_CREAT | os.O_WRONLY, 0o644))
        made += 1
finally:
    print(made)
raise RuntimeError(f"made {made} files")
"""


def test_the_socket_folder_is_the_sandboxs_small_tmpfs_not_the_disk(tmp_path, sandboxed):
    honest = write(tmp_path / "a_honest" / f"{LESSON}.ipynb", solved())
    filler = write(tmp_path / "b_filler" / f"{LESSON}.ipynb", attack(FILL, MANY_FILES))
    disk = os.statvfs(tmp_path)
    before = (disk.f_bavail * disk.f_frsize, disk.f_favail)

    def free():
        now = os.statvfs(tmp_path)
        return now.f_bavail * now.f_frsize, now.f_favail

    with Sampler(free, every=0.05) as sampler:
        _, report = grade_class([honest.parent, filler.parent], "-j", 2)
    least_bytes = min(b for b, _ in sampler.values)
    least_inodes = min(i for _, i in sampler.values)
    assert before[0] - least_bytes < 256 * 2**20  # the 1.4 GiB never reached the disk
    assert before[1] - least_inodes < 50_000  # nor the 200,000 files
    raised = sorted(cell_errors(report, filler).values())
    assert any("No space left on device after 0 bytes" in e for e in raised), raised
    assert any("RuntimeError: made 200000 files" in e for e in raised), raised  # in memory
    assert_honest_and_no_pass(report, honest, filler)
    assert_nothing_left(report)


LINK_THE_SOCKETS = """\
import os, socket, time
for n in range(1, 6):  # every socket of the kernel becomes a link to the decoy
    os.unlink(f"/run/kernel/k-{{n}}")
    os.symlink({decoy!r}, f"/run/kernel/k-{{n}}")
for fd in map(int, os.listdir("/proc/self/fd")):  # drop the runner's connections
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        continue
    with s:
        name = s.getsockname() if s.family == socket.AF_UNIX else ""
        if str(name).startswith("/run/kernel/"):
            if not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                s.shutdown(socket.SHUT_RDWR)
time.sleep(3)  # the runner would reconnect now, through the links
"""


def test_a_link_put_in_place_of_a_socket_never_gets_the_runner_connected(tmp_path, sandboxed):
    decoy_path = str(tmp_path / "decoy.sock")  # a socket of the machine, root's to reach
    decoy = socket.socket(socket.AF_UNIX)
    decoy.bind(decoy_path)
    decoy.listen(64)
    decoy.settimeout(0.05)
    connections = []

    def count():
        try:
            conn, _ = decoy.accept()
            connections.append(conn)
        except OSError:
            pass
        return len(connections)

    honest = write(tmp_path / "a_honest" / f"{LESSON}.ipynb", solved())
    linker = write(
        tmp_path / "b_linker" / f"{LESSON}.ipynb",
        attack(LINK_THE_SOCKETS.format(decoy=decoy_path)),
    )
    try:
        with Sampler(count, every=0):
            _, report = grade_class([honest.parent, linker.parent], "-j", 2, "--timeout", 10)
    finally:
        for conn in connections:
            conn.close()
        decoy.close()
    assert connections == []
    assert_honest_and_no_pass(report, honest, linker)
    assert_nothing_left(report)


# ---- the size of a message -------------------------------------------------------------------

ONE_FRAME = """\
kernel = get_ipython().kernel
kernel.iopub_socket.send_multipart([b"x" * 300_000_000], copy=False)
import time; time.sleep(5)
"""
MANY_FRAMES = """\
kernel = get_ipython().kernel
frame = b"y" * 10_000_000  # each frame below the cap, 300 MB in one message
kernel.iopub_socket.send_multipart([frame] * 30, copy=False)
import time; time.sleep(5)
"""


def runner_memory():
    """``{pid: (peak resident bytes, address-space limit)}`` of this process's runners."""
    found = {}
    me = os.getpid()
    pids = []
    for task in os.listdir(f"/proc/{me}/task"):  # runners are started by worker threads
        try:
            with open(f"/proc/{me}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            continue
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"runner.py" not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                peak = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:"))
            with open(f"/proc/{pid}/limits") as f:
                line = next(x for x in f if x.startswith("Max address space"))
            found[pid] = (peak, line.split()[3])
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return found


def test_a_300_mb_message_is_refused_before_the_runner_reads_it(tmp_path, sandboxed):
    one = write(tmp_path / "a_one_frame" / f"{LESSON}.ipynb", attack(ONE_FRAME))
    many = write(tmp_path / "b_many_frames" / f"{LESSON}.ipynb", attack(MANY_FRAMES))
    honest = write(tmp_path / "c_honest" / f"{LESSON}.ipynb", solved())  # next, same slot
    with Sampler(runner_memory, every=0.005) as sampler:
        _, report = grade_class([one.parent, many.parent, honest.parent], "-j", 1)
    seen = {}
    for sample in sampler.values:
        for pid, (peak, limit) in sample.items():
            seen[pid] = (max(peak, seen.get(pid, (0, ""))[0]), limit)
    assert len(seen) == 3  # each runner was measured
    assert max(peak for peak, _ in seen.values()) < 128 * 2**20
    assert all(limit != "unlimited" for _, limit in seen.values())  # its own memory limit
    cap = report["limits"]["output_cap"]
    for attacker in (one, many):
        verdict = rows_of(report, attacker)["(notebook)"]["message"]
        assert f"printed more than the {cap} bytes allowed" in verdict
    assert_honest_and_no_pass(report, honest, one)
    assert_honest_and_no_pass(report, honest, many)
    assert_nothing_left(report)


# ---- memory, CPU and processes per notebook --------------------------------------------------

FORK_4_GIB = """\
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            data = bytearray(2**30)
            data[::4096] = b"\\x01" * (2**30 // 4096)  # every page resident
            time.sleep(3)
        finally:
            os._exit(0)
    children.append(pid)
statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
"""
LEAVE_THE_GROUP = """\
import os
open("/sys/fs/cgroup/memory/cgroup.procs", "w").write(str(os.getpid()))
"""


def test_four_forked_children_of_1_gib_end_at_the_notebooks_memory_limit(tmp_path, cgroups_here):
    honest = write(tmp_path / "a_honest" / f"{LESSON}.ipynb", solved())
    forker = write(
        tmp_path / "b_forker" / f"{LESSON}.ipynb",
        attack(FORK_4_GIB, "raise RuntimeError(statuses)", LEAVE_THE_GROUP),
    )
    _, report = grade_class([honest.parent, forker.parent], "-j", 2)
    errors = list(cell_errors(report, forker).values())
    limit = report["limits"]["memory"] // 2**20
    assert f"MemoryError: the notebook passed its memory limit of {limit} MiB" in errors[0]
    statuses = json.loads(errors[1].removeprefix("RuntimeError: "))
    assert statuses.count(0) <= 1  # two of 1 GiB do not fit in 2 GiB with the kernel
    assert statuses.count(-9) >= 3  # killed at the limit
    assert "FileNotFoundError" in errors[2]  # no way out of its group
    assert "per notebook (cgroups v" in report["sandbox_detail"]
    assert_honest_and_no_pass(report, honest, forker)
    assert_nothing_left(report)


BUSY = """\
import os, time
end = time.time() + 10
for _ in range(60):
    if os.fork() == 0:
        os.setsid()  # each in its own session, as a detached daemon would be
        while time.time() < end:
            pass
        os._exit(0)
time.sleep(max(0, end - time.time()))
"""


WORK = """\
import time
time.sleep(0.5)  # the other slot's first cell starts its processes meanwhile
total = 0
for i in range(20_000_000):  # about a second of work on a quiet core
    total += i
"""


def test_60_busy_processes_leave_the_other_slot_within_2x_its_quiet_time(tmp_path, cgroups_here):
    """Slot 0 runs 60 busy processes for 10 s from its first cell; slot 1 grades at the
    same time an honest notebook whose first cell works for about a second."""
    from attnlib import grade

    seconds = {}
    for kind in ("quiet", "busy", "quiet again"):  # interleaved: the machine's load drifts
        root = tmp_path / kind.replace(" ", "_")
        nb = unsolved()
        nb["cells"].insert(0, code(BUSY if kind == "busy" else "pass"))
        busy = write(root / "a_busy" / f"{LESSON}.ipynb", nb)
        nb = solved()
        nb["cells"].insert(0, code(WORK))
        honest = write(root / "b_honest" / f"{LESSON}.ipynb", nb)
        results = {}
        report = grade.grade(
            [busy.parent, honest.parent],
            jobs=2,
            require_sandbox=True,
            on_result=lambda r, done, total, results=results: results.update({r["notebook"]: r}),
        )
        assert_honest_and_no_pass(report, honest, busy)
        assert report["cell_errors"] == {}
        assert_nothing_left(report)
        seconds[kind] = results[str(honest)]["cell_seconds"]  # its cells ran beside them
    quiet = (seconds["quiet"] + seconds["quiet again"]) / 2
    assert seconds["busy"] < 2 * quiet, (seconds, os.getloadavg())


# ---- the pieces, without a sandbox -----------------------------------------------------------


@pytest.fixture
def fake_kernel(tmp_path):
    """``(key, iopub XPUB, info)``: a fake kernel's sockets in ``tmp_path``."""
    zmq = pytest.importorskip("zmq")
    key = os.urandom(32).hex()
    context = zmq.Context()
    shell, iopub = context.socket(zmq.ROUTER), context.socket(zmq.XPUB)
    shell.bind(f"ipc://{tmp_path}/k-1")
    iopub.bind(f"ipc://{tmp_path}/k-2")
    info = {"transport": "ipc", "ip": f"{tmp_path}/k", "shell_port": 1, "iopub_port": 2}
    yield key, iopub, info | {"key": key}
    context.destroy(linger=0)


@pytest.mark.parametrize("frames", [[b"x" * 50_000_000], [b"y" * 900_000] * 50])
def test_a_message_past_the_cap_stops_before_the_runner_reads_it(fake_kernel, frames):
    from attnlib.grade import runner

    _, iopub, info = fake_kernel
    client = runner.Client(info, cap=1_000_000)
    try:
        assert iopub.poll(5000) and iopub.recv() == b"\x01"  # subscribed
        iopub.send_multipart(frames, copy=False)
        with pytest.raises(runner.Stop, match="output"):
            client.get_iopub_msg(timeout=10)
        held = len(client._buf) + sum(map(len, client._frames))
        assert held <= 1_000_000 + runner.CHUNK  # the cap and one read, never the message
    finally:
        client.stop_channels()


def test_the_runner_connects_to_no_link_and_no_socket_of_another_uid(tmp_path):
    from attnlib.grade import runner

    decoy = socket.socket(socket.AF_UNIX)
    decoy.bind(str(tmp_path / "decoy.sock"))
    decoy.listen(8)
    decoy.setblocking(False)
    inside = tmp_path / "root" / "run" / "kernel"
    inside.mkdir(parents=True)
    (inside / "k-1").symlink_to(tmp_path / "decoy.sock")  # a link to a socket of the machine
    (inside / "k-2").symlink_to(tmp_path / "decoy.sock")
    info = {"transport": "ipc", "ip": "/run/kernel/k", "shell_port": 1, "iopub_port": 2}
    info["key"] = "k"
    root = str(tmp_path / "root")
    client = runner.Client(info, root=lambda: root, owner=os.geteuid())
    assert not client.connect()
    (tmp_path / "root" / "run" / "kernel").rename(tmp_path / "root" / "run" / "real")
    (tmp_path / "root" / "run" / "kernel").symlink_to(tmp_path)  # a linked folder on the way
    assert not client.connect()
    with pytest.raises(BlockingIOError):
        decoy.accept()  # nobody ever knocked
    other = socket.socket(socket.AF_UNIX)  # a real socket there, but not the kernel's uid
    other.bind(str(tmp_path / "root" / "run" / "real" / "k-0"))
    other.listen(8)
    other.setblocking(False)
    info |= {"ip": "/run/real/k", "shell_port": 0, "iopub_port": 0}
    client = runner.Client(info, root=lambda: root, owner=os.geteuid() + 1)
    assert not client.connect()
    with pytest.raises(BlockingIOError):
        other.accept()
    other.close()
    decoy.close()


def test_the_cgroup_files_of_v2_and_the_report_without_any(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    run = cg._v2(str(tmp_path), 2**30, 64)
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    [[parent, settings]] = run.plan()["groups"]
    assert parent == str(tmp_path) and run.plan()["oom"] == [0, "memory.events"]
    assert settings == [
        ["memory.max", 2**30],
        ["memory.swap.max", 0],
        ["cpu.weight", cg.WEIGHT],
        ["pids.max", 64],
    ]
    none, reason = cg.make(2**30, 64, root=str(tmp_path / "nothing"))
    assert none is None and "no cgroups here" in reason
    line = cg.describe(None, reason, {"memory": 2**31, "cpu": 300})
    assert line.startswith("per notebook: none (no cgroups here")
    assert "per process only: 2048 MiB of address space, 300 s of CPU" in line


def test_without_cgroups_the_report_says_which_limits_hold(tmp_path, sandboxed, monkeypatch):
    monkeypatch.setattr(cg, "ROOT", str(tmp_path / "no-cgroups"))
    honest = write(tmp_path / "a_honest" / f"{LESSON}.ipynb", solved())
    _, report = grade_class([honest.parent])
    assert "limits per notebook: none (no cgroups here" in report["sandbox_detail"]
    assert "per process only: 2048 MiB of address space" in report["sandbox_detail"]
    assert report["all_passed"]


def test_without_the_sandbox_the_report_says_only_per_process_limits_hold(tmp_path):
    honest = write(tmp_path / "a_honest" / f"{LESSON}.ipynb", solved())
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "--json", "-q", "--no-sandbox", str(honest.parent)])
    report = json.loads(out.getvalue())
    assert report["sandbox"] is False and report["all_passed"]
    detail = report["sandbox_detail"]
    assert detail.startswith("turned off (--no-sandbox); limits per notebook: none (no sandbox)")
    assert "per process only: 2048 MiB of address space, 300 s of CPU" in detail


def test_a_dead_graders_empty_groups_are_removed_and_busy_ones_never_touched(cgroups_here):
    import subprocess

    dead = next(p for p in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{p}"))
    parent = cgroups_here.parents[0]
    empty = os.path.join(parent, f"{cg.PREFIX}{dead}-aaaaaa-1")
    busy = os.path.join(parent, f"{cg.PREFIX}{dead}-aaaaaa-2")
    os.mkdir(empty)
    os.mkdir(busy)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(os.path.join(busy, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        run, _ = cg.make(sb.MEMORY, sb.PROCESSES)
        assert run is not None
        assert not os.path.exists(empty)
        assert os.path.exists(busy) and sleeper.poll() is None  # maybe another grader's
    finally:
        sleeper.kill()
        sleeper.wait()
        for _ in range(100):
            try:
                os.rmdir(busy)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
