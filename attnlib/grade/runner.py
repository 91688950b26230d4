"""Run one notebook's code cells in a fresh kernel, then leave no process behind.

This file is run by the grader as its own program (``python -I runner.py``), one per
notebook, so it imports only the standard library and ``zmq`` (pyzmq, which the kernel
uses too); never attnlib, never anything a student's code could have touched. It speaks
the few messages of the Jupyter protocol it needs itself (:class:`Client`): importing
``jupyter_client`` cost every notebook about 0.1 s of CPU. It reads a job as JSON on stdin::

    {"cells": [source, ...],                 code cells, outputs already dropped
     "cell_timeout": 30, "budget": 120,      seconds per cell / for all cells
     "output_cap": 1048576,                  bytes of every message the kernel may send
     "sandbox": null or {...}}               bubblewrap's options (attnlib.grade.sandbox)

With a sandbox, the kernel runs under bubblewrap with the files of the current working
directory (a temporary copy the grader made) copied into its own working folder, and
talks to this process over Unix sockets (the ipc transport) in a private folder: no TCP
port. Without one (the fallback), it runs here with TCP on 127.0.0.1.

Every answer a notebook's ``check`` records arrives as a display message of type
``application/vnd.attnlib.answer+json`` (:mod:`attnlib.selfcheck.record`); each is
printed at once as ``{"partial": {id: text}}``, and at the end one JSON line::

    {"answers": {id: text}, "cell_errors": [[i, reason]],
     "stop": null or {"cell": i, "reason": "..."}, "killed": n}

Nothing stored in the notebook runs or counts: the cells are run one by one from their
source. After the last cell (or the first timeout, kernel death or output flood) the
sandbox is killed, and with it its whole process namespace; without a sandbox the
kernel's process group is killed, and, because this process is a child subreaper
(Linux), every process the notebook started that escaped the group (``setsid``, double
fork) is re-parented here and killed too.
"""

import ctypes
import hashlib
import hmac
import json
import os
import queue
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
STARTUP_TIMEOUT = 60.0  # seconds for the kernel to answer its first request
RESEND = 0.5  # seconds before kernel_info is asked again (when no iopub_welcome came)
POLL = 0.1  # seconds at most between two looks at whether the kernel died
ANSWER_MIME = "application/vnd.attnlib.answer+json"
# ipykernel_launcher without the debugger: ipykernel imports debugpy (pydevd) at every
# start when it can, about 0.2 s of each notebook's CPU, for a debugger no graded notebook
# uses; None in sys.modules makes that import fail, so the kernel starts without it
KERNEL_LAUNCH = (
    "import sys; sys.modules['debugpy'] = None; "
    "from ipykernel import kernelapp; kernelapp.launch_new_instance()"
)


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


def limited(rlimits):
    """A ``preexec_fn``: set the resource limits, then die with this runner."""

    def preexec():
        for name, value in rlimits.items():
            resource.setrlimit(getattr(resource, name), (value, value))
        die_with_parent()

    return preexec


def kill_uid(uid):
    """SIGKILL every process whose real uid is ``uid`` (a sandbox slot's); return how many."""
    killed = 0
    for _ in range(100):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/status") as f:
                        line = next(x for x in f if x.startswith("Uid:"))
                    if int(line.split()[1]) == uid:
                        found.append(int(entry))
                except (OSError, StopIteration, ValueError, IndexError):
                    continue
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return killed


DELIMITER = b"<IDS|MSG>"
PROTOCOL = "5.3"


class Client:
    """The kernel's shell and iopub channels, as much as the runner uses of them.

    Messages are signed with the connection's key (HMAC-SHA256) as the Jupyter protocol
    says; what arrives on iopub unsigned or malformed comes back with ``msg_type`` None
    and its frames as ``buffers`` (so it still counts against the output cap). ``get_iopub_msg``
    returns ``{"msg_type", "header", "parent_header", "metadata", "content", "buffers"}``
    and raises :class:`queue.Empty` after ``timeout`` seconds, blocking on the socket.
    Shell replies are never read: iopub carries everything the runner waits for.
    """

    def __init__(self, info):
        import zmq

        self._zmq = zmq
        self.key = info["key"].encode()
        self.session = uuid.uuid4().hex
        self.context = zmq.Context()

        def url(port):
            if info["transport"] == "ipc":
                return f"ipc://{info['ip']}-{info[port]}"
            return f"tcp://{info['ip']}:{info[port]}"

        self.shell = self.context.socket(zmq.DEALER)
        self.iopub = self.context.socket(zmq.SUB)
        for sock in (self.shell, self.iopub):
            sock.linger = 0
            sock.setsockopt(zmq.RECONNECT_IVL, 10)  # ms: the kernel binds ~0.3 s after start
        self.shell.setsockopt(zmq.IDENTITY, self.session.encode())
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.shell.connect(url("shell_port"))
        self.iopub.connect(url("iopub_port"))

    def _sign(self, parts):
        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode()

    def _send(self, msg_type, content):
        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "username": "grader",
            "session": self.session,
            "date": datetime.now(timezone.utc).isoformat(),
            "version": PROTOCOL,
        }
        parts = [json.dumps(x).encode() for x in (header, {}, {}, content)]
        self.shell.send_multipart([DELIMITER, self._sign(parts), *parts])
        return header["msg_id"]

    def kernel_info(self):
        return self._send("kernel_info_request", {})

    def execute(self, code, store_history=True, allow_stdin=False):
        content = {
            "code": code,
            "silent": False,
            "store_history": store_history,
            "user_expressions": {},
            "allow_stdin": allow_stdin,
            "stop_on_error": True,
        }
        return self._send("execute_request", content)

    def get_iopub_msg(self, timeout):
        end = time.monotonic() + timeout
        while True:
            left = max(0.0, end - time.monotonic())
            if not self.iopub.poll(int(left * 1000) + (left > 0)):
                raise queue.Empty
            frames = self.iopub.recv_multipart(copy=True)
            try:
                at = frames.index(DELIMITER)
                signature, parts = frames[at + 1], frames[at + 2 : at + 6]
                if len(parts) != 4 or not hmac.compare_digest(signature, self._sign(parts)):
                    raise ValueError("not signed with the key")
                header, parent, metadata, content = (json.loads(p) for p in parts)
                if not all(isinstance(x, dict) for x in (header, parent, metadata, content)):
                    raise ValueError("not a message")
            except (ValueError, IndexError, RecursionError):
                # not a message of the protocol: nothing in it counts but its size
                empty = {"header": {}, "parent_header": {}, "metadata": {}, "content": {}}
                return {"msg_type": None, **empty, "buffers": frames}
            return {
                "msg_type": header.get("msg_type"),
                "header": header,
                "parent_header": parent,
                "metadata": metadata,
                "content": content,
                "buffers": frames[at + 6 :],
            }

    def stop_channels(self):
        self.shell.close(linger=0)
        self.iopub.close(linger=0)
        self.context.term()


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


def run_cell(client, kernel, code, limits, answers):
    """Execute one cell and wait for it; return its error (``"Name: value"``) or None."""
    started = time.monotonic()
    deadline = min(started + limits["cell_timeout"], limits["budget_end"])
    try:
        return _wait_for_cell(client, kernel, code, deadline, limits, answers)
    finally:
        limits["cell_seconds"] += time.monotonic() - started


def message_bytes(msg):
    """What a message costs against the output cap: its content and buffers, any type."""
    size = len(json.dumps(msg.get("content", {}), default=str))
    size += len(json.dumps(msg.get("metadata", {}), default=str))
    return size + sum(len(b) for b in msg.get("buffers") or ())


def _wait_for_cell(client, kernel, code, deadline, limits, answers):
    msg_id = client.execute(code, store_history=True, allow_stdin=False)
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
        # every message counts, whatever its type or parent (comm, foreign stream, ...)
        limits["output"] -= message_bytes(msg)
        if limits["output"] < 0:
            raise Stop("output")
        kind, content = msg["msg_type"], msg["content"]
        if kind in ("display_data", "update_display_data", "execute_result"):
            payload = (content.get("data") or {}).get(ANSWER_MIME)
            if isinstance(payload, dict) and isinstance(payload.get("exercise"), str):
                if isinstance(payload.get("data"), str):
                    answers[payload["exercise"]] = payload["data"]
                    # sent at once: the answer counts even if this runner is killed later
                    line = {"partial": {payload["exercise"]: payload["data"]}}
                    sys.stdout.write(json.dumps(line) + "\n")
                    sys.stdout.flush()
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if kind == "status" and content.get("execution_state") == "idle":
            return error
        if kind == "error":
            error = _one_line(f"{content.get('ename')}: {content.get('evalue')}")


def wait_for_ready(client, kernel):
    """Ask for kernel_info until the kernel answers on iopub (or dies, or is late).

    iopub is connected once it relays a request's "idle" status. A request sent before
    this process's subscription reached the kernel has its status lost (ZeroMQ's late
    subscriber), so the request is sent again: at once when the kernel announces the
    subscription (its ``iopub_welcome`` message, ipykernel 7), else every
    :data:`RESEND` seconds. Every wait blocks on the socket (no sleep), and looks at the
    kernel's process at least every :data:`POLL` seconds.
    """
    deadline = time.monotonic() + STARTUP_TIMEOUT
    msg_id, resend = None, 0.0
    while time.monotonic() < deadline:
        if kernel.poll() is not None:
            raise Stop("start")
        now = time.monotonic()
        if now >= resend:
            msg_id, resend = client.kernel_info(), now + RESEND
        try:
            msg = client.get_iopub_msg(timeout=max(0.0, min(POLL, resend - now)))
        except queue.Empty:
            continue
        if msg["msg_type"] == "iopub_welcome":
            resend = 0.0  # subscribed now: the next request's status cannot be lost
        elif (
            msg.get("parent_header", {}).get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"].get("execution_state") == "idle"
        ):
            return
    raise Stop("start")


def tcp_connection(folder):
    """Write a kernel connection file (five free local ports, a random key); its info."""
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
    return path, info


def ipc_connection(folder, inside, uid):
    """A connection over Unix sockets in ``folder`` (``inside`` in the sandbox).

    The kernel's file names the sandbox's path; the returned info (for this process)
    names the same sockets by their path here. Both are owned by the kernel's ``uid``.
    """
    names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    info = dict(zip(names, range(1, 6), strict=True))
    info |= {"key": os.urandom(32).hex(), "transport": "ipc"}
    info |= {"signature_scheme": "hmac-sha256", "kernel_name": ""}
    path = os.path.join(folder, "kernel.json")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        json.dump(info | {"ip": f"{inside}/k"}, f)
    if uid is not None:
        os.chown(folder, uid, uid)
        os.chown(path, uid, uid)
    return f"{inside}/kernel.json", info | {"ip": os.path.join(folder, "k")}


def start_kernel(job, private):
    """Start the kernel (in bubblewrap when ``job["sandbox"]``); (process, client info)."""
    box = job.get("sandbox")
    kernel_args = ["-c", KERNEL_LAUNCH, "--HistoryManager.enabled=False"]
    if box is None:  # the fallback: a kernel of this user, in this folder
        path, info = tcp_connection(private)
        home = os.path.join(private, "home")
        os.mkdir(home)
        env = dict(job["env"], HOME=home, TMPDIR=home, MPLCONFIGDIR=home)
        env["PYTHONPATH"] = job["package_parent"]  # the course package without answer key
        kernel = subprocess.Popen(
            [sys.executable, *kernel_args, "-f", path],
            cwd=os.getcwd(),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own session and process group, killed as one
            preexec_fn=limited(job["rlimits"]),
        )
        return kernel, info
    ipc = os.path.join(private, "ipc")
    os.mkdir(ipc, 0o700)
    path, info = ipc_connection(ipc, box["ipc"], box["uid"])
    fds, files = [], []
    try:
        for name in sorted(os.listdir(".")):
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
            fds.append(fd)
            files += ["--file", str(fd), f"{box['workdir']}/{name}"]
        argv = [*box["bwrap"], "--bind", ipc, box["ipc"], *files, "--chdir", box["workdir"]]
        argv += ["--", *box["command"], *kernel_args, "-f", path]
        kernel = subprocess.Popen(
            argv,
            env=box["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=fds,
            start_new_session=True,
            preexec_fn=limited(box["rlimits"]),
        )
    finally:
        for fd in fds:
            os.close(fd)
    return kernel, info


def run(job):
    result = {"answers": {}, "cell_errors": [], "stop": None, "killed": 0}
    private = tempfile.mkdtemp(prefix="attnlib-kernel-", dir=job.get("private"))
    kernel, info = start_kernel(job, private)
    client = Client(info)  # zmq is imported while the kernel starts
    limits = {"output": job["output_cap"], "cell_timeout": job["cell_timeout"]}
    limits["cell_seconds"] = 0.0
    index = -1
    try:
        wait_for_ready(client, kernel)
        limits["budget_end"] = time.monotonic() + job["budget"]
        for index, code in enumerate(job["cells"]):
            error = run_cell(client, kernel, code, limits, result["answers"])
            if error:
                result["cell_errors"].append([index, error])
    except Stop as stop:
        result["stop"] = {"cell": index, "reason": str(stop)}
    finally:
        client.stop_channels()
        result["killed"] = kill_all(kernel)
        uid = (job.get("sandbox") or {}).get("uid")
        if uid is not None:  # the namespace died with bwrap; make sure of it
            result["killed"] += kill_uid(uid)
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
