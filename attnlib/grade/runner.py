"""Run one notebook's code cells in a fresh kernel, then leave no process behind.

This file is run by the grader as its own program (``python -I runner.py``), one per
notebook, so it imports only the standard library and ``jupyter_client``; never attnlib,
never anything a student's code could have touched. It reads a job as JSON on stdin::

    {"cells": [source, ...],                 code cells, outputs already dropped
     "captures": {"3": [[id, code], ...]},   grader cells run after code cell 3
     "nonce": "...",                         frames the capture output
     "cell_timeout": 30, "budget": 120,      seconds per cell / for all cells
     "output_cap": 1048576}                  bytes the student's cells may print

runs the kernel in the current working directory (a temporary copy the grader made) in a
session of its own, prints ``{"partial": {id: text}}`` as each answer comes back, and at
the end one JSON line::

    {"captured": {id: text}, "capture_errors": {id: reason}, "cell_errors": [[i, reason]],
     "stop": null or {"cell": i, "reason": "..."}, "killed": n}

Nothing stored in the notebook runs or counts: the cells are run one by one from their
source. After the last cell (or the first timeout, kernel death or output flood) the
kernel's process group is killed, and, because this process is a child subreaper (Linux),
every process the notebook started that escaped the group (``setsid``, double fork) is
re-parented here and killed too.
"""

import ctypes
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
STARTUP_TIMEOUT = 60.0  # seconds for the kernel to answer its first request


def become_subreaper():
    """Orphaned descendants come to this process instead of init (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent():
    """Run in the kernel's process before it starts: SIGKILL it if this runner dies."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def children(pid):
    """Process ids whose parent is ``pid``."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    data = f.read()
                if int(data[data.rindex(b")") + 2 :].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def kill_all(kernel):
    """Kill the kernel's group, then every process left below this one; return how many."""
    killed = 0
    try:
        os.killpg(kernel.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    kernel.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = children(os.getpid())
        if not left:
            break
        for pid in left:
            try:
                pgid = os.getpgid(pid)
                if pgid != os.getpgrp():
                    os.killpg(pgid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
        while True:  # reap what was killed (and what re-parented here meanwhile)
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
    return killed


def _one_line(text, limit=300):
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class Stop(Exception):
    """The notebook cannot go on: a timeout, a dead kernel or too much output."""


def run_cell(client, kernel, code, limits, collect=None):
    """Execute one cell and wait for it; return its error (``"Name: value"``) or None."""
    started = time.monotonic()
    deadline = min(started + limits["cell_timeout"], limits["budget_end"])
    try:
        return _wait_for_cell(client, kernel, code, deadline, limits, collect)
    finally:
        limits["cell_seconds"] += time.monotonic() - started


def _wait_for_cell(client, kernel, code, deadline, limits, collect):
    msg_id = client.execute(code, store_history=collect is None, allow_stdin=False)
    error = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Stop("budget" if deadline >= limits["budget_end"] else "timeout")
        try:
            msg = client.get_iopub_msg(timeout=min(left, 0.25))
        except queue.Empty:
            if kernel.poll() is not None:
                raise Stop("died") from None
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content.get("execution_state") == "idle":
            return error
        if kind == "error":
            error = _one_line(f"{content.get('ename')}: {content.get('evalue')}")
        if kind == "stream" and collect is not None:
            collect.append(content.get("text", ""))
            limits["capture"] -= len(content.get("text", ""))
            if limits["capture"] < 0:
                raise Stop("capture")
        elif kind in ("stream", "display_data", "execute_result", "update_display_data"):
            limits["output"] -= len(json.dumps(content.get("data", content.get("text", ""))))
            if limits["output"] < 0:
                raise Stop("output")


def wait_for_ready(client, kernel):
    """Ask for kernel_info until the kernel answers on both channels (or dies, or is late).

    iopub is connected once it relays the request's "idle" status; earlier requests may
    be lost to ZeroMQ's late subscriber, so they are sent again.
    """
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if kernel.poll() is not None:
            raise Stop("start")
        msg_id = client.kernel_info()
        until = time.monotonic() + 0.5
        while time.monotonic() < until:
            try:
                msg = client.get_iopub_msg(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                break
            if (
                msg.get("parent_header", {}).get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
            ):
                return
    raise Stop("start")


def frames(text, nonce):
    """The texts between pairs of ``nonce`` markers in ``text``."""
    parts = text.split(nonce)
    return parts[1:-1:2]


def connection_file(folder):
    """Write a kernel connection file (five free local ports, a random key); its path."""
    sockets = [socket.socket() for _ in range(5)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    info = dict(zip(names, ports, strict=True))
    info |= {"ip": "127.0.0.1", "key": os.urandom(32).hex(), "transport": "tcp"}
    info |= {"signature_scheme": "hmac-sha256", "kernel_name": ""}
    path = os.path.join(folder, "kernel.json")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        json.dump(info, f)
    return path


def run(job):
    result = {"captured": {}, "capture_errors": {}, "cell_errors": [], "stop": None, "killed": 0}
    private = tempfile.mkdtemp(prefix="attnlib-kernel-", dir=job.get("private"))
    connection = connection_file(private)
    env = dict(os.environ)
    env.update(
        PYTHONDONTWRITEBYTECODE="1",  # a kernel writes no bytecode: any new .pyc is tampering
        MPLBACKEND="agg",
    )
    env.pop("PYTHONSTARTUP", None)
    kernel = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            connection,
            "--HistoryManager.enabled=False",
        ],
        cwd=os.getcwd(),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own session and process group, killed as one
        preexec_fn=die_with_parent,
    )
    from jupyter_client import BlockingKernelClient  # imported while the kernel starts

    client = BlockingKernelClient()
    client.load_connection_file(connection)
    client.start_channels(hb=False)
    nonce = job["nonce"]
    limits = {"output": job["output_cap"], "capture": 64 * 2**20}
    limits["cell_timeout"] = job["cell_timeout"]
    limits["cell_seconds"] = 0.0
    index = -1
    try:
        wait_for_ready(client, kernel)
        limits["budget_end"] = time.monotonic() + job["budget"]
        for index, code in enumerate(job["cells"]):
            error = run_cell(client, kernel, code, limits)
            if error:
                result["cell_errors"].append([index, error])
            for exercise, capture in job["captures"].get(str(index), ()):
                out = []
                error = run_cell(client, kernel, capture, limits, collect=out)
                found = frames("".join(out), nonce)
                if len(found) == 1:
                    result["captured"][exercise] = found[0]
                    result["capture_errors"].pop(exercise, None)
                    # sent at once, so the answer counts even if this runner is killed later
                    sys.stdout.write(json.dumps({"partial": {exercise: found[0]}}) + "\n")
                    sys.stdout.flush()
                else:
                    reason = error or (
                        "the answer did not come back from the kernel"
                        if not found
                        else "the kernel sent more than one answer"
                    )
                    result["capture_errors"][exercise] = reason
    except Stop as stop:
        result["stop"] = {"cell": index, "reason": str(stop)}
    finally:
        client.stop_channels()
        result["killed"] = kill_all(kernel)
        result["exit"] = kernel.returncode
        result["cell_seconds"] = limits["cell_seconds"]
        shutil.rmtree(private, ignore_errors=True)
    return result


def main():
    job = json.loads(sys.stdin.read())
    become_subreaper()
    result = run(job)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
