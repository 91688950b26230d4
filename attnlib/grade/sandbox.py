"""The operating-system sandbox each graded notebook's kernel runs in: bubblewrap.

Every kernel runs under ``bwrap`` (bubblewrap, a maintained tool made for this; Debian's
package ``bubblewrap``) with

- its own user: when the grader runs as root, ``setpriv`` (util-linux) inside the
  sandbox drops to one of the run's uids (from ``FIRST_UID``) with no groups and no
  capabilities, two uids per parallel slot taken in turn (the slot's next kernel starts
  under one while the last one's processes are killed by the other), so
  ``RLIMIT_NPROC`` counts one kernel's processes only and no file of the machine is the
  kernel's own; otherwise an unprivileged user namespace (the
  kernel then has the grader's uid outside, and only what is mounted is visible);
- its own process, network, IPC and UTS namespaces (``--unshare-pid``, ...): no network
  (only a loopback of its own), no other process visible, and when the sandbox's first
  process dies (``--die-with-parent``: when the runner dies) every process the notebook
  started dies with it; a new session (no terminal to type into);
- a file system made of: the system's ``/usr`` and a few files of ``/etc`` read-only, the
  Python installation and the virtual environment read-only, a stripped copy of the
  course package mounted over the installed one (:func:`strip_package`: no expected
  values, mistakes, checkers or grader), size-limited tmpfs ``/tmp``, ``/dev/shm`` and
  home, the notebook and its listed files copied into ``/home/student/work``, and a
  tmpfs of :data:`IPC_SIZE` bytes (``/run/kernel``) for the connection file and the
  kernel's Unix sockets (the ipc transport: no TCP port), which the runner reaches
  through the sandbox's root without following any link (:class:`runner.Client`). The
  course repository, ``/root``, the instructor's home, other students' folders and
  kernels, ``/proc`` of the grader and ``/etc/shadow`` are not there;
- resource limits set before it starts: per process address space, CPU seconds and file
  size, processes per uid; per notebook (all its processes together) memory, an equal
  CPU share per slot and processes, with control groups (:mod:`.limits`) where the
  machine allows; the environment is built from scratch (no ``TMUX``, no instructor
  variables).

Nothing outside the sandbox is writable by the kernel, and everything it wrote is in
memory the sandbox's tmpfs counts, gone with the sandbox.

:func:`probe` says whether a sandbox can be made here, and why not.
"""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

BWRAP_ENV = "ATTNLIB_BWRAP"  # the bwrap program to use (a test points it at a missing one)
FIRST_UID = 61000  # kernels run as uids from here (when the grader is root), one per slot
UID_RANGE = 1000  # ... up to FIRST_UID + UID_RANGE; each run leases its own (lock files)
LOCKS = "/tmp/attnlib-sandbox-uids"  # one lock file per uid in use by a running grader
MEMORY = 2 * 2**30  # bytes of address space per kernel process (RLIMIT_AS)
CPU = 300  # CPU seconds per kernel process (RLIMIT_CPU)
PROCESSES = 128  # processes and threads per slot (RLIMIT_NPROC)
FILE_SIZE = 256 * 2**20  # bytes one file may grow to (RLIMIT_FSIZE)
TMPFS = 256 * 2**20  # bytes of each of /tmp, /dev/shm and the home folder
IPC_SIZE = 2**20  # bytes of the sockets' tmpfs (sockets take none; the connection file)
HOME = "/home/student"
WORKDIR = HOME + "/work"
IPC = "/run/kernel"
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "fonts",
    "alternatives",
    "mime.types",
    "matplotlibrc",
)
STRIPPED = (  # never in the kernel's copy of the course package
    "checkers",
    "grade",
    "selfcheck/registry.py",
    "selfcheck/mistakes.py",
    "selfcheck/judge.py",
    "selfcheck/exercise.py",
    "selfcheck/display.py",
)

# functions of the checkers that notebooks import (inputs only, no expected value): the
# kernel's copy of each lesson's checkers module holds these alone, copied from their source
NOTEBOOK_HELPERS = ("tolerance_inputs",)


@dataclass
class Sandbox:
    """How to start one kernel in bubblewrap (see the module docstring)."""

    bwrap: str
    package: str  # the stripped copy, mounted over ``installed``
    installed: str
    root: bool = field(default_factory=lambda: os.geteuid() == 0)
    limits: dict = field(default_factory=dict)
    uids: list = field(default_factory=list)  # leased by :meth:`lease`, one per slot
    cgroups: object = None  # the run's control groups (limits.Run), made by :meth:`lease`
    cgroups_reason: str = "not made yet"  # why there are none
    _locks: list = field(default_factory=list)

    def lease(self, slots):
        """Take ``slots`` uids no other grader on this machine is using (root only).

        Each uid is held by an exclusive lock on a file of :data:`LOCKS` until
        :meth:`release`, so two graders at once never share (nor kill) a kernel uid.
        """
        import fcntl

        from . import limits as cg

        self.cgroups, self.cgroups_reason = cg.make(
            self.limits.get("memory", MEMORY),
            self.limits.get("processes", PROCESSES),
        )
        if not self.root:
            return
        os.makedirs(LOCKS, mode=0o700, exist_ok=True)
        for uid in range(FIRST_UID, FIRST_UID + UID_RANGE):
            if len(self.uids) == slots:
                break
            fd = os.open(f"{LOCKS}/{uid}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uids.append(uid)
            self._locks.append(fd)
        if len(self.uids) < slots:
            self.release()
            raise OSError(f"no free sandbox uid between {FIRST_UID} and {FIRST_UID + UID_RANGE}")

    def release(self):
        if self.cgroups is not None:
            self.cgroups.remove()
            self.cgroups = None
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()

    def job(self, slot):
        """The runner's ``job["sandbox"]``: bwrap's options, the command, limits, uid."""
        uid = (self.uids[slot] if self.uids else FIRST_UID + slot) if self.root else None
        args = [self.bwrap, *self.options(uid)]
        command = []
        if uid is not None:
            command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
            command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return {
            "bwrap": args,
            "command": [*command, executable()],
            "uid": uid,
            "ipc": IPC,
            "workdir": WORKDIR,
            "env": environment(),
            "rlimits": rlimits(self.limits, per_uid=uid is not None),
            "cgroups": self.cgroups.plan() if self.cgroups is not None else None,
        }

    def options(self, uid):
        size = str(int(self.limits.get("tmpfs", TMPFS)))
        opts = ["--die-with-parent", "--new-session"]
        if uid is not None:  # root: namespaces without a user namespace; setpriv drops to uid
            opts += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
            opts += ["--unshare-cgroup-try"]
        else:
            opts += ["--unshare-all", "--uid", "1000", "--gid", "1000"]
        for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                opts += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                opts += ["--ro-bind", top, top]
        opts += ["--perms", "0755", "--dir", "/etc"]
        for name in ETC:
            opts += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # the private /tmp and home first: bwrap mounts in order, so a venv or course that
        # lives under /tmp (a CI clone, say) is bound on top of the tmpfs, not hidden by it
        opts += ["--size", size, "--perms", "1777", "--tmpfs", "/tmp"]
        opts += ["--size", size, "--perms", "0777", "--tmpfs", HOME]
        made = set()
        for path in [*python_paths(), self.installed]:
            # the folders above a mount point: traversable, not listable (bwrap's: neither)
            for parent in reversed(Path(path).parents):
                if str(parent) != "/" and str(parent) not in made:
                    made.add(str(parent))
                    opts += ["--perms", "0711", "--dir", str(parent)]
        for path in python_paths():
            opts += ["--ro-bind", path, path]
        opts += ["--ro-bind", self.package, self.installed]  # over the installed package
        opts += ["--proc", "/proc", "--dev", "/dev"]
        opts += ["--size", size, "--perms", "1777", "--tmpfs", "/dev/shm"]
        opts += ["--perms", "0777", "--dir", WORKDIR]
        opts += ["--perms", "0755", "--dir", os.path.dirname(IPC)]
        # not sticky: the kernel's uid replaces the connection file bwrap made as root
        # (ipykernel 6 rewrites it at every start, as jupyter_core's secure_write: remove,
        # then create 0600; in a sticky folder the remove fails and so does the start)
        opts += ["--size", str(IPC_SIZE), "--perms", "0777", "--tmpfs", IPC]
        return opts


def python_paths():
    """The Python installation and the virtual environment (real paths, deduplicated)."""
    found = []
    for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix):
        real = os.path.realpath(p)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(p + os.sep) for p in found):
        found.append(os.path.dirname(exe))
    found = sorted(found, key=len)
    return [p for i, p in enumerate(found) if not any(p.startswith(q + os.sep) for q in found[:i])]


def executable():
    """This Python by a path without ``..`` (the folders it passes are not in the sandbox)."""
    return os.path.normpath(os.path.abspath(sys.executable))


def environment():
    """The kernel's whole environment: nothing of the grader's is passed on."""
    venv_bin = os.path.dirname(executable())
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
    }


def rlimits(limits, per_uid):
    """``{name: bytes or seconds}`` the runner sets before starting the sandbox."""
    found = {
        "RLIMIT_AS": int(limits.get("memory", MEMORY)),
        "RLIMIT_CPU": int(limits.get("cpu", CPU)),
        "RLIMIT_FSIZE": int(limits.get("file_size", FILE_SIZE)),
        "RLIMIT_CORE": 0,
    }
    if per_uid:  # with a shared uid this would count the instructor's processes too
        found["RLIMIT_NPROC"] = int(limits.get("processes", PROCESSES))
    return found


def installed_package():
    import attnlib

    return str(Path(attnlib.__file__).resolve().parent)


def strip_package(dest, registry):
    """Copy the course package into ``dest`` without the answer key; return its path.

    Left out: :data:`STRIPPED` (the checkers with expected values and mistakes, the
    registry, the judge, the grader). Added: ``selfcheck/grading.json``, each exercise's
    kind, inputs (``cases``, wire text) and symbol names, which is all ``check`` needs to
    record an answer as data. Everything is world-readable, nothing writable.
    """
    from attnlib.selfcheck import wire

    source = Path(installed_package())
    target = Path(dest) / "attnlib"
    skip = {str(source / name) for name in STRIPPED}

    def ignore(folder, names):
        return [
            n
            for n in names
            if str(Path(folder) / n) in skip or n == "__pycache__" or n.endswith(".pyc")
        ]

    shutil.copytree(source, target, ignore=ignore, symlinks=False)
    spec = {}
    for ex in registry.exercises().values():
        called = ex.kind in ("function", "proof")
        spec[ex.id] = {
            "kind": ex.kind,
            "cases": wire.encode(tuple(ex.cases)) if called else None,
            "arg_names": list(ex.arg_names or ()),
        }
    import importlib
    import inspect

    helpers = target / "checkers"
    helpers.mkdir()
    (helpers / "__init__.py").write_text('"""Helpers the notebooks import; no answers."""\n')
    for stem in registry.LESSONS:
        module = importlib.import_module(registry._module_name(stem))
        names = [name for name in NOTEBOOK_HELPERS if hasattr(module, name)]
        if names:
            text = ["import numpy as np", ""]
            text += ["", *(inspect.getsource(getattr(module, name)) for name in names)]
            name = module.__name__.rsplit(".", 1)[1] + ".py"
            (helpers / name).write_text("\n".join(text), encoding="utf-8")
    grading = target / "selfcheck" / "grading.json"
    grading.write_text(json.dumps({"exercises": spec}), encoding="utf-8")
    import compileall

    compileall.compile_dir(str(target), quiet=2)
    for folder, _dirs, files in os.walk(Path(dest)):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return str(target)


def bwrap_program(explicit=None):
    """The bwrap to use: ``explicit``, else ``$ATTNLIB_BWRAP``, else ``bwrap`` on PATH."""
    return explicit or os.environ.get(BWRAP_ENV) or shutil.which("bwrap") or "bwrap"


def probe(sandbox):
    """``None`` if a kernel can start in ``sandbox`` here, else the reason in one line."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux (this is {sys.platform})"
    program = sandbox.bwrap
    if not (os.path.isfile(program) and os.access(program, os.X_OK)) and not shutil.which(program):
        return f"bubblewrap not found ({program}); install it: apt-get install bubblewrap"
    job = sandbox.job(0)
    if job["uid"] is not None and not shutil.which("setpriv"):
        return "setpriv (util-linux) not found: no separate uid can be set"
    argv = [*job["bwrap"], "--", *job["command"], "-c", "import attnlib.selfcheck"]
    try:
        done = subprocess.run(
            argv, env=job["env"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap could not run: {err}"
    if done.returncode != 0:
        lines = (done.stderr or "").strip().splitlines() or [f"exit status {done.returncode}"]
        return f"bubblewrap could not make a sandbox here: {lines[-1][:200]}"
    return None


def unsandboxed_limits(limits):
    """What holds without the sandbox (no cgroups either), as the end of its reason."""
    from . import limits as cg

    return "; limits " + cg.describe(None, "no sandbox", limits)


def describe(sandbox):
    """One line: what the kernels run in."""
    who = (
        f"two uids per slot from {FIRST_UID} (one a kernel), no capabilities"
        if sandbox.root
        else "an unprivileged user namespace (the grader's uid outside)"
    )
    from . import limits as cg

    held = cg.describe(sandbox.cgroups, sandbox.cgroups_reason, sandbox.limits)
    return (
        f"bubblewrap ({sandbox.bwrap}): {who}; no network; own pid namespace; course package "
        f"without the answer key; nothing outside the sandbox writable; limits {held}"
    )
