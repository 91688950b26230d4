"""Run one notebook's code cells in a fresh kernel, then leave no process behind.

This file is run by the grader as its own program (``python -I runner.py``), one per
notebook, so it imports only the standard library; never attnlib, never anything a
student's code could have touched. It speaks the few messages of the Jupyter protocol it
needs, and ZeroMQ's wire protocol under them, itself (:class:`Client`): importing
``jupyter_client`` cost every notebook about 0.1 s of CPU, and libzmq reads a whole
message into memory before anyone can look at its size. It runs under an address-space
limit of its own (:data:`RUNNER_MEMORY`). It reads a job as JSON on stdin, in two lines
(or the whole job on the first)::

    {"output_cap": 1048576,                  bytes the kernel may send on iopub (every
                                             frame, charged before it is read)
     "sandbox": null or {...}}               bubblewrap's options (attnlib.grade.sandbox)
                                             and control groups (attnlib.grade.limits)
    {"cells": [source, ...],                 code cells, outputs already dropped
     "cell_timeout": 30, "budget": 120}      seconds per cell / for all cells

The first line starts the kernel (its control groups, its sandbox, the first reply)
before the notebook is known: the grader starts the next notebook's runner while the
current one is judged and cleaned up. The second line comes when the notebook does;
its files are then in the current working directory, and the runner copies them into
the sandbox's empty working folder (:func:`send_files`) before any cell runs, so a
kernel started ahead never sees any file but its own notebook's. A runner whose stdin
closes before the second line ends with nothing run. After the last cell it prints
``{"cells_done": true}`` before cleaning up, so the grader can start the next one.

With a sandbox, the kernel runs under bubblewrap with the files of the current working
directory (a temporary copy the grader made) copied into its own working folder, in
control groups of its own (:class:`Cgroups`: memory, CPU share and processes for the
notebook as a whole), and talks to this process over Unix sockets (the ipc transport)
in a tmpfs of the sandbox: no TCP port, nothing on this machine's disk. Without one (the
fallback), it runs here with TCP on 127.0.0.1.

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
import select
import shutil
import signal
import socket
import stat
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
EXIT_WAIT = 0.5  # seconds a kernel that closed its sockets has to exit by itself
ANSWER_MIME = "application/vnd.attnlib.answer+json"
RUNNER_MEMORY = 512 * 2**20  # bytes of address space of the runner itself, plus 8 x the cap
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


def limited(rlimits, groups=None):
    """A ``preexec_fn``: join ``groups``, set the resource limits, die with this runner."""

    def preexec():
        if groups is not None:
            groups.join()
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
# ZeroMQ's wire protocol, ZMTP 3.0 with the NULL mechanism (rfc.zeromq.org/spec/23), which
# the kernel's libzmq speaks: a 64-byte greeting, a READY command each way, then frames
GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + bytes(32)
MORE, LONG, COMMAND = 1, 2, 4  # the flags of a frame
HANDSHAKE_LIMIT = 4096  # bytes the kernel's READY command may take
HANDSHAKE_TIMEOUT = 10.0  # seconds to connect and exchange the greetings
FRAME_COST = 64  # bytes a frame costs against the output cap at least (bounds the count)
CHUNK = 2**18  # bytes read from the socket at once
CONNECT_POLL = 0.005  # seconds between two looks for the kernel's sockets while it starts
PARSED = {"status", "error", "display_data", "update_display_data", "execute_result"}


class Stop(Exception):
    """The notebook cannot go on: a timeout, a dead kernel or too much output."""


def _frame(body, more=False, command=False):
    flags = (MORE if more else 0) | (COMMAND if command else 0)
    if len(body) > 255:
        return bytes([flags | LONG]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def _ready(socket_type, identity=b""):
    props = [(b"Socket-Type", socket_type)] + ([(b"Identity", identity)] if identity else [])
    body = b"\x05READY" + b"".join(
        bytes([len(k)]) + k + len(v).to_bytes(4, "big") + v for k, v in props
    )
    return _frame(body, command=True)


class Client:
    """The kernel's shell and iopub channels, as much as the runner uses of them.

    It speaks ZeroMQ's wire protocol itself over plain sockets (no libzmq here), so that
    nothing the kernel sends is read before it is counted: each frame's size is known
    from its header, and a frame that would take the kernel past ``cap`` bytes (all it
    sent on iopub, headers and frames included) raises :class:`Stop` ("output") before
    one byte of it is read. The runner's memory stays near the cap, whatever the kernel
    sends. Shell replies are never read: iopub carries everything the runner waits for.

    The kernel's Unix sockets are found under ``root()`` (the sandbox's root seen from
    here, ``/proc/PID/root``) one folder at a time without following any link, must be
    sockets owned by ``owner`` (the kernel's uid), and are connected through the opened
    file (``/proc/self/fd/N``), once: a kernel that puts a link or another socket in
    their place is never connected to, and the runner never reconnects.

    Messages are signed with the connection's key (HMAC-SHA256) as the Jupyter protocol
    says; what arrives on iopub unsigned or malformed comes back with ``msg_type`` None
    and its frames as ``buffers``. ``get_iopub_msg`` returns ``{"msg_type", "header",
    "parent_header", "metadata", "content", "buffers"}`` and raises :class:`queue.Empty`
    after ``timeout`` seconds, blocking on the socket.
    """

    def __init__(self, info, cap=None, root=None, owner=None):
        self.info = info
        self.key = info["key"].encode()
        self.session = uuid.uuid4().hex
        self.left = cap  # bytes the kernel may still send on iopub (None: no cap)
        self.root = root
        self.owner = os.geteuid() if owner is None else owner
        self.shell = self.iopub = None
        self._buf = bytearray()
        self._frames = []  # the frames of the message being read
        self._pending = None  # (flags, size) of the frame whose body is being read
        self.connect()  # at once if the kernel is there already; else at the first use

    # -- connecting ---------------------------------------------------------------------

    def _socket_fd(self, path):
        """An ``O_PATH`` file of the kernel's socket ``path``, or None (not there yet)."""
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        if self.root is None:  # the runner's own folder (tests): only the socket is checked
            base, names = os.path.dirname(path), [os.path.basename(path)]
        else:
            base = self.root()
            names = [name for name in path.split("/") if name]
            if base is None:
                return None
        try:
            folder = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            for name in names[:-1]:
                inner = os.open(name, flags | os.O_DIRECTORY, dir_fd=folder)
                os.close(folder)
                folder = inner
            fd = os.open(names[-1], flags, dir_fd=folder)
        except OSError:
            return None
        finally:
            os.close(folder)
        info = os.fstat(fd)
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != self.owner:
            os.close(fd)  # a link, a file, another's socket: never connected to
            return None
        return fd

    def _open(self, port, socket_type, identity=b""):
        info = self.info
        if info["transport"] == "ipc":
            fd = self._socket_fd(f"{info['ip']}-{info[port]}")
            if fd is None:
                return None
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address = f"/proc/self/fd/{fd}"
        else:
            fd, sock = None, socket.socket()
            address = (info["ip"], info[port])
        try:
            sock.settimeout(HANDSHAKE_TIMEOUT)
            sock.connect(address)
        except OSError:  # bound but not listening yet, or gone
            sock.close()
            return None
        finally:
            if fd is not None:
                os.close(fd)
        try:
            sock.sendall(GREETING)
            greeting = self._exact(sock, 64)
            if (
                greeting[0] != 0xFF
                or greeting[9] != 0x7F
                or greeting[10] < 3
                or greeting[12:32].rstrip(b"\0") != b"NULL"
            ):
                raise ValueError("not ZMTP 3 with the NULL mechanism")
            sock.sendall(_ready(socket_type, identity))
            flags = self._exact(sock, 1)[0]
            size = int.from_bytes(self._exact(sock, 8 if flags & LONG else 1), "big")
            if not flags & COMMAND or size > HANDSHAKE_LIMIT:
                raise ValueError("no READY command")
            if not self._exact(sock, size).startswith(b"\x05READY"):
                raise ValueError("no READY command")
        except (OSError, ValueError) as err:
            sock.close()
            raise Stop("start") from err
        sock.settimeout(STARTUP_TIMEOUT)  # a request the kernel does not take in time
        return sock

    @staticmethod
    def _exact(sock, n):
        data = b""
        while len(data) < n:
            more = sock.recv(n - len(data))
            if not more:
                raise ValueError("the kernel closed the connection")
            data += more
        return data

    def connect(self):
        """Connect what is not connected yet; True once both channels are."""
        if self.shell is None:
            self.shell = self._open("shell_port", b"DEALER", self.session.encode())
        if self.iopub is None and self.shell is not None:
            self.iopub = self._open("iopub_port", b"SUB")
            if self.iopub is not None:
                self.iopub.sendall(_frame(b"\x01"))  # subscribe to every message
        return self.iopub is not None

    # -- shell --------------------------------------------------------------------------

    def _sign(self, parts):
        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode()

    def _send(self, msg_type, content):
        """Send a request on shell; its msg_id, or None while the kernel is not there yet."""
        if not self.connect():
            return None
        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "username": "grader",
            "session": self.session,
            "date": datetime.now(timezone.utc).isoformat(),
            "version": PROTOCOL,
        }
        parts = [json.dumps(x).encode() for x in (header, {}, {}, content)]
        frames = [DELIMITER, self._sign(parts), *parts]
        data = b"".join(_frame(f, more=i < len(frames) - 1) for i, f in enumerate(frames))
        try:
            self.shell.sendall(data)
        except TimeoutError:
            raise Stop("timeout") from None
        except OSError:
            raise Stop("died") from None
        return header["msg_id"]

    def kernel_info(self):
        return self._send("kernel_info_request", {})

    def execute(self, code, store_history=True, allow_stdin=False, silent=False):
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": {},
            "allow_stdin": allow_stdin,
            "stop_on_error": True,
        }
        return self._send("execute_request", content)

    # -- iopub --------------------------------------------------------------------------

    def _charge(self, n):
        if self.left is not None:
            self.left -= n
            if self.left < 0:
                raise Stop("output")

    def _fill(self, n, end):
        """Read until the buffer holds ``n`` bytes; :class:`queue.Empty` at ``end``."""
        while len(self._buf) < n:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.iopub], [], [], max(0.0, left))
            if not ready:
                raise queue.Empty
            try:
                data = self.iopub.recv(CHUNK)
            except OSError:
                data = b""
            if not data:  # the kernel closed its iopub: nothing more can come
                raise Stop("died")
            self._buf += data

    def _read_frames(self, end):
        """The frames of the next message; each frame's size is charged before it is read."""
        while True:
            if self._pending is None:
                self._fill(1, end)
                head = 9 if self._buf[0] & LONG else 2
                self._fill(head, end)
                flags, size = self._buf[0], int.from_bytes(self._buf[1:head], "big")
                if flags & ~(MORE | LONG | COMMAND) or (flags & COMMAND and flags & MORE):
                    raise Stop("output")  # not the protocol: nothing after it can be read
                self._charge(max(head + size, FRAME_COST))
                del self._buf[:head]
                self._pending = (flags, size)
            flags, size = self._pending
            self._fill(size, end)
            body = bytes(self._buf[:size])
            del self._buf[:size]
            self._pending = None
            if flags & COMMAND:
                if self._frames:
                    raise Stop("output")
                continue  # a command (PING, ...): counted, not a message
            self._frames.append(body)
            if not flags & MORE:
                frames, self._frames = self._frames, []
                return frames

    def get_iopub_msg(self, timeout):
        end = time.monotonic() + timeout
        while not self.connect():
            left = end - time.monotonic()
            if left <= 0:
                raise queue.Empty
            time.sleep(min(CONNECT_POLL, left))
        return self._parse(self._read_frames(end))

    def _parse(self, frames):
        try:
            at = frames.index(DELIMITER)
            signature, parts = frames[at + 1], frames[at + 2 : at + 6]
            if len(parts) != 4 or not hmac.compare_digest(signature, self._sign(parts)):
                raise ValueError("not signed with the key")
            header, parent = json.loads(parts[0]), json.loads(parts[1])
            metadata, content = {}, {}
            if isinstance(header, dict) and header.get("msg_type") in PARSED:
                metadata, content = json.loads(parts[2]), json.loads(parts[3])
            if not all(isinstance(x, dict) for x in (header, parent, metadata, content)):
                raise ValueError("not a message")
        except (ValueError, IndexError, RecursionError, MemoryError):
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
        for sock in (self.shell, self.iopub):
            if sock is not None:
                sock.close()
        self.shell = self.iopub = None


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


def run_cell(client, kernel, code, limits, answers):
    """Execute one cell and wait for it; return its error (``"Name: value"``) or None."""
    started = time.monotonic()
    deadline = min(started + limits["cell_timeout"], limits["budget_end"])
    try:
        return _wait_for_cell(client, kernel, code, deadline, limits, answers)
    finally:
        limits["cell_seconds"] += time.monotonic() - started


def message_bytes(msg):
    """A message's content, metadata and buffers in bytes (the cap itself is charged by
    :class:`Client` on the frames as they arrive)."""
    size = len(json.dumps(msg.get("content", {}), default=str))
    size += len(json.dumps(msg.get("metadata", {}), default=str))
    return size + sum(len(b) for b in msg.get("buffers") or ())


def _wait_for_cell(client, kernel, code, deadline, limits, answers, silent=False):
    msg_id = client.execute(code, store_history=not silent, allow_stdin=False, silent=silent)
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
        # every message counted (as it was read), whatever its type or parent
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
            msg_id = client.kernel_info()  # None: its sockets are not there yet
            resend = now + (RESEND if msg_id else CONNECT_POLL)
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


def ipc_connection(inside):
    """A connection over Unix sockets in the sandbox's folder ``inside``: (file, info).

    The file (a memfd the sandbox copies in) names the sockets by their path in the
    sandbox, a folder of its own size-limited tmpfs; nothing of it is on this machine's
    disk, and the runner finds the sockets through the sandbox's root (:class:`Client`).
    """
    names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    info = dict(zip(names, range(1, 6), strict=True))
    info |= {"key": os.urandom(32).hex(), "transport": "ipc", "ip": f"{inside}/k"}
    info |= {"signature_scheme": "hmac-sha256", "kernel_name": ""}
    fd = os.memfd_create("kernel.json")
    os.write(fd, json.dumps(info).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd, info


def sandbox_root(bwrap_pid):
    """The sandbox's root as this process reaches it (``/proc/PID/root``), or None yet."""
    found = children(bwrap_pid)
    return f"/proc/{found[0]}/root" if found else None


class Cgroups:
    """The notebook's own control groups: its memory, CPU share and processes together.

    ``plan`` (made by :mod:`attnlib.grade.limits`) lists ``[parent, [[file, value], ...]]``
    per hierarchy (cgroups v1: one per controller; v2: one). A group named after this
    runner is made under each parent and its limits written before the kernel starts;
    the kernel's first process joins them (:meth:`join`, before bwrap runs), so the
    kernel and everything it starts are inside and cannot leave (the files are root's).
    :meth:`remove` kills whatever is left in them and removes them.
    """

    def __init__(self, plan):
        self.plan, self.paths = plan, []
        name = f"{plan['prefix']}{os.getpid()}"
        try:
            for parent, settings in plan["groups"]:
                path = os.path.join(parent, name)
                os.mkdir(path, 0o755)
                self.paths.append(path)
                for key, value in settings:
                    with open(os.path.join(path, key), "w") as f:
                        f.write(str(value))
        except OSError:
            self.remove()
            raise

    def join(self):
        for path in self.paths:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def oom_kills(self):
        """Processes the kernel killed in these groups for passing the memory limit."""
        index, name = self.plan["oom"]
        try:
            with open(os.path.join(self.paths[index], name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def pids(self):
        found = set()
        for path in self.paths:
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    found.update(int(p) for p in f.read().split())
            except (OSError, ValueError):
                pass
        return found

    def remove(self):
        """Kill every process left in the groups, reap what comes here, remove the groups."""
        deadline = time.monotonic() + 10
        while self.paths and time.monotonic() < deadline:
            left = self.pids()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            reap()
            for path in list(self.paths):
                try:
                    os.rmdir(path)
                    self.paths.remove(path)
                except FileNotFoundError:
                    self.paths.remove(path)
                except OSError:  # busy: a process not yet gone
                    pass
            if self.paths:
                time.sleep(0.01)


def reap():
    """Wait for every child of this process that has ended (none is left a zombie)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def start_kernel(job, private, groups=None):
    """Start the kernel (in bubblewrap when ``job["sandbox"]``); (process, client).

    The kernel's first process joins ``groups`` (:class:`Cgroups`) before it runs.
    """
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
        return kernel, Client(info, cap=job["output_cap"])
    connection, info = ipc_connection(box["ipc"])
    fds = [connection]
    files = ["--perms", "0644", "--file", str(connection), f"{box['ipc']}/kernel.json"]
    try:
        # a kernel started ahead starts empty: its notebook's files come with the notebook
        for name in sorted(os.listdir(".")) if "cells" in job else []:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
            fds.append(fd)
            files += ["--file", str(fd), f"{box['workdir']}/{name}"]
        argv = [*box["bwrap"], *files, "--chdir", box["workdir"]]
        argv += ["--", *box["command"], *kernel_args, "-f", f"{box['ipc']}/kernel.json"]
        kernel = subprocess.Popen(
            argv,
            env=box["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=fds,
            start_new_session=True,
            preexec_fn=limited(box["rlimits"], groups),
        )
    finally:
        for fd in fds:
            os.close(fd)
    owner = box["uid"] if box["uid"] is not None else os.geteuid()
    client = Client(info, cap=job["output_cap"], root=lambda: sandbox_root(kernel.pid), owner=owner)
    return kernel, client


FILES_CODE = """\
def _attnlib_files(files):
    import base64, os
    for name, data in files.items():
        with open(os.path.join({workdir!r}, name), "xb") as f:
            f.write(base64.b64decode(data))
_attnlib_files({files!r})
del _attnlib_files
"""


def send_files(client, kernel, workdir):
    """Copy the notebook's files (this folder's regular files) into the kernel's empty
    working folder: run by the kernel, before any of the notebook's code, unseen (silent)."""
    import base64

    files = {}
    for name in sorted(os.listdir(".")):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
        with open(fd, "rb") as f:
            files[name] = base64.b64encode(f.read()).decode("ascii")
    if not files:
        return
    code = FILES_CODE.format(workdir=workdir, files=files)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    limits = {"budget_end": deadline}
    try:
        error = _wait_for_cell(client, kernel, code, deadline, limits, {}, silent=True)
    except Stop:
        raise Stop("start") from None
    if error:
        raise Stop("start")


def memory_note(groups):
    mib = groups.plan.get("memory", 0) // 2**20
    return f"the notebook passed its memory limit of {mib} MiB (all its processes together)"


def run(job):
    started = time.monotonic()
    result = {"answers": {}, "cell_errors": [], "stop": None, "killed": 0}
    steps = result["seconds"] = {}  # where the time went (benchmarks/grading.py)
    private = tempfile.mkdtemp(prefix="attnlib-kernel-", dir=job.get("private"))
    plan = (job.get("sandbox") or {}).get("cgroups")
    groups = Cgroups(plan) if plan else None
    kernel, client = start_kernel(job, private, groups)
    limits = {"cell_seconds": 0.0}
    index, ooms = -1, 0
    try:
        steps["start"] = time.monotonic() - started
        wait_for_ready(client, kernel)
        steps["ready"] = time.monotonic() - started
        if "cells" not in job:  # started ahead: the notebook comes now (or never)
            line = sys.stdin.readline()
            if not line:
                raise Stop("unused")
            job.update(json.loads(line))
            steps["job"] = time.monotonic() - started
            if job.get("sandbox"):
                send_files(client, kernel, job["sandbox"]["workdir"])
        else:
            steps["job"] = steps["start"]
        steps["files"] = time.monotonic() - started
        limits["cell_timeout"] = job["cell_timeout"]
        limits["budget_end"] = time.monotonic() + job["budget"]
        for index, code in enumerate(job["cells"]):
            error = run_cell(client, kernel, code, limits, result["answers"])
            if groups is not None and groups.oom_kills() > ooms:
                ooms = groups.oom_kills()
                note = f"MemoryError: {memory_note(groups)}; a process of it was killed"
                error = note + (f" (then {error})" if error else "")
            if error:
                result["cell_errors"].append([index, error])
    except Stop as stop:
        result["stop"] = {"cell": index, "reason": str(stop)}
    finally:
        steps["cells"] = time.monotonic() - started
        sys.stdout.write(json.dumps({"cells_done": True}) + "\n")
        sys.stdout.flush()
        client.stop_channels()
        if result["stop"] and result["stop"]["reason"] in ("died", "start"):
            try:  # its own exit status, not the SIGKILL below (a failed start says why)
                kernel.wait(timeout=EXIT_WAIT)
            except subprocess.TimeoutExpired:
                pass
        result["killed"] = kill_all(kernel)
        steps["killed"] = time.monotonic() - started
        uid = (job.get("sandbox") or {}).get("uid")
        if uid is not None:  # the namespace died with bwrap; make sure of it
            result["killed"] += kill_uid(uid)
        steps["uid"] = time.monotonic() - started
        result["exit"] = kernel.returncode
        if groups is not None:
            if result["stop"] and groups.oom_kills() > ooms:
                result["exit"] = f"{kernel.returncode}: {memory_note(groups)}"
            groups.remove()
        steps["cgroups"] = time.monotonic() - started
        result["cell_seconds"] = limits["cell_seconds"]
        shutil.rmtree(private, ignore_errors=True)
        steps["end"] = time.monotonic() - started
    return result


def own_memory_limit(output_cap):
    """Limit this process's address space (soft: its children set their own limits)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = RUNNER_MEMORY + 8 * int(output_cap)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def main():
    job = json.loads(sys.stdin.readline())
    own_memory_limit(job["output_cap"])
    become_subreaper()
    result = run(job)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
