"""Limits per notebook, not per process: Linux control groups (cgroups).

A resource limit (``setrlimit``) holds for one process: a notebook that forks four
children of 1 GiB holds 4 GiB under a 2 GiB limit, and 60 busy processes of one notebook
take 60 shares of the CPU from a classmate's one. A control group holds a notebook's
processes together, whatever they start: the kernel's first process joins it before it
runs (:class:`attnlib.grade.runner.Cgroups`) and nothing inside can leave it (its files
are root's and not in the sandbox).

For a run, :func:`make` finds where groups can be made (beside the grader's own group of
each hierarchy) and tries it; each notebook's runner then makes its own groups there
(``attnlib-PID-XXXXXX-RUNNER``, PID the grader's) with

- memory: ``limits["memory"]`` bytes for all the notebook's processes (swap included);
  past it the kernel kills one of them, and the runner says so in the verdict;
- CPU: the same weight for every notebook, so two slots share the CPU equally, however
  many processes either runs;
- processes: ``limits["processes"]`` processes and threads.

Both hierarchies are handled: v2 (``/sys/fs/cgroup/cgroup.controllers``: ``memory.max``,
``memory.swap.max``, ``cpu.weight``, ``pids.max``) where the machine has it, and v1
(``/sys/fs/cgroup/{memory,cpu,pids}``: ``memory.limit_in_bytes``,
``memory.memsw.limit_in_bytes``, ``cpu.shares``, ``pids.max``) where that is what it has.
Where neither can be written (not root, a container without delegation, not Linux),
:func:`make` says why, and :func:`describe` says which limits hold instead (per process).
:meth:`Run.remove` kills whatever is left and removes every group of the run; groups a
killed grader left behind are removed by the next run.
"""

import os
import secrets
import signal
import time

ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"
V1 = ("memory", "cpu", "pids")  # the v1 controllers used, each its own hierarchy
SHARES, WEIGHT = 1024, 100  # v1 cpu.shares and v2 cpu.weight of one notebook (the default)
PREFIX = "attnlib-"
OPTIONAL = ("memory.memsw.limit_in_bytes", "memory.swap.max")  # only with swap accounting


def own_groups(proc_cgroup=PROC_CGROUP):
    """``{controller: path}`` of this process's groups (v2's under the key ``""``)."""
    found = {}
    with open(proc_cgroup) as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    return found


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _remove_tree(path, deadline):
    """Kill every process in the group ``path`` and below, then remove the groups."""
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            _remove_tree(entry.path, deadline)
    while True:
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except FileNotFoundError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _sweep_stale(parent):
    """Remove the empty groups of graders that are gone (a killed grader leaves them).

    Only empty ones: their kernels died with their runners; a group with a process in it
    may be another grader's (in another pid namespace) and is never touched.
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX) :].split("-", 1)[0]
        if name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass


class Run:
    """The groups of one grading run; :meth:`plan` is what each runner needs.

    Each notebook's groups sit beside the grader's processes, not under a group of the
    run: a notebook then weighs on the CPU as one process of the machine does, however
    many it starts, and a slot's share never depends on what the other slot runs.
    """

    def __init__(self, version, parents, settings, oom, memory, processes):
        self.version = version
        self.parents = parents  # one folder per hierarchy, where the notebooks' groups go
        self.settings = settings  # [[file, value], ...] per hierarchy, for each notebook
        self.oom = oom  # [index into parents, file that counts "oom_kill"]
        self.memory, self.processes = memory, processes
        self.prefix = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}-"

    def plan(self):
        """``job["sandbox"]["cgroups"]`` for :class:`attnlib.grade.runner.Cgroups`."""
        return {
            "groups": [[p, s] for p, s in zip(self.parents, self.settings, strict=True)],
            "prefix": self.prefix,
            "oom": self.oom,
            "memory": self.memory,
        }

    def groups(self):
        """The notebooks' groups of this run that exist now."""
        found = []
        for parent in self.parents:
            try:
                names = os.listdir(parent)
            except OSError:
                continue
            found += [os.path.join(parent, n) for n in names if n.startswith(self.prefix)]
        return found

    def remove(self):
        """Kill whatever is left in the run's groups (a runner killed at the wall time
        leaves its own) and remove them."""
        deadline = time.monotonic() + 10
        for group in self.groups():
            try:
                _remove_tree(group, deadline)
            except OSError:
                pass

    def check(self):
        """Make and remove one notebook's groups now: OSError if they cannot be made."""
        made = []
        try:
            for parent, settings in zip(self.parents, self.settings, strict=True):
                group = os.path.join(parent, f"{self.prefix}probe")
                os.mkdir(group, 0o755)
                made.append(group)
                for key, value in list(settings):
                    if key in OPTIONAL and not os.path.exists(os.path.join(group, key)):
                        settings.remove([key, value])  # no swap accounting here
                    else:
                        _write(os.path.join(group, key), value)
        finally:
            for group in made:
                os.rmdir(group)


def _v1(root, own, memory, processes):
    parents, settings = [], []
    for controller in V1:
        parent = os.path.join(root, controller) + own.get(controller, "/")
        _sweep_stale(parent)
        parents.append(parent)
        if controller == "memory":
            found = [["memory.limit_in_bytes", memory], ["memory.memsw.limit_in_bytes", memory]]
        elif controller == "cpu":
            found = [["cpu.shares", SHARES]]
        else:
            found = [["pids.max", processes]]
        settings.append(found)
    return Run(1, parents, settings, [0, "memory.oom_control"], memory, processes)


def _v2(root, memory, processes):
    wanted = ("memory", "cpu", "pids")
    with open(os.path.join(root, "cgroup.controllers")) as f:
        have = f.read().split()
    missing = [c for c in wanted if c not in have]
    if missing:
        raise OSError(f"cgroups v2 without the {', '.join(missing)} controller")
    _sweep_stale(root)
    with open(os.path.join(root, "cgroup.subtree_control")) as f:
        enabled = f.read().split()
    if not all(c in enabled for c in wanted):
        _write(os.path.join(root, "cgroup.subtree_control"), " ".join(f"+{c}" for c in wanted))
    settings = [["memory.max", memory], ["memory.swap.max", 0]]
    settings += [["cpu.weight", WEIGHT], ["pids.max", processes]]
    return Run(2, [root], [settings], [0, "memory.events"], memory, processes)


def make(memory, processes, root=None, proc_cgroup=PROC_CGROUP):
    """``(Run, None)`` if each notebook can have its groups here, else ``(None, why not)``.

    Tried by making and removing one notebook's groups (:meth:`Run.check`).
    """
    memory, processes, root = int(memory), int(processes), root or ROOT
    try:
        if os.path.exists(os.path.join(root, "cgroup.controllers")):
            run = _v2(root, memory, processes)
        elif all(os.path.isdir(os.path.join(root, c)) for c in V1):
            run = _v1(root, own_groups(proc_cgroup), memory, processes)
        else:
            return None, f"no cgroups here (neither v2 nor v1 memory, cpu and pids in {root})"
        run.check()
    except OSError as err:
        return None, f"cgroups could not be made here: {err.strerror or err}"
    return run, None


def describe(run, reason=None, limits=None):
    """One line: which limits hold per notebook, and which only per process."""
    if run is not None:
        return (
            f"per notebook (cgroups v{run.version}): {run.memory // 2**20} MiB of memory, "
            f"{run.processes} processes, the CPU shared equally between slots"
        )
    limits = limits or {}
    per_process = []
    if "memory" in limits:
        per_process.append(f"{int(limits['memory']) // 2**20} MiB of address space")
    if "cpu" in limits:
        per_process.append(f"{int(limits['cpu'])} s of CPU")
    held = ", ".join(per_process) or "resource limits"
    return (
        f"per notebook: none ({reason}); per process only: {held}; "
        "the CPU not shared fairly between slots"
    )
