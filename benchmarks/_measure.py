"""Shared helpers for the benchmark scripts: inputs, wall time, peak memory, the machine.

Not a test: these scripts print figures for the README. Run them on a quiet machine
when you can; on a shared one the times are noisy.
"""

import os
import platform
import time
import tracemalloc

import numpy as np


def random_qkv(n, d, seed=0):
    """Self-attention inputs: Q, K, V of shape (n, d), float64."""
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(n, d)) for _ in range(3))


def best_seconds(run, repeat=3):
    """The fastest of ``repeat`` wall-clock times of ``run()``: the least disturbed one."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(run):
    """Peak bytes allocated while ``run()`` executes (numpy reports its arrays to tracemalloc)."""
    tracemalloc.start()
    try:
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def mib(n_bytes):
    return n_bytes / 2**20


def cpu_model():
    """The CPU's model name on Linux, else the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine():
    """One line naming the machine and the libraries the figures depend on."""
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return (
        f"{cpu_model()} ({platform.machine()}), {os.cpu_count()} cores, {platform.system()}, "
        f"Python {platform.python_version()}, numpy {np.__version__} "
        f"({blas.get('name', '?')} {blas.get('version', '')})".strip()
    )
