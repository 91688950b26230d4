"""Peak memory of full attention against blocked attention at n = 16384, d = 64.

    python benchmarks/blocked_memory.py                 # n = 16384 (needs about 3 GiB free)
    python benchmarks/blocked_memory.py --n 4096        # a quicker look

Each method runs in a fresh subprocess, so one method's freed memory cannot hide the
other's. A child builds Q, K, V, then calls the method once and reports two peaks:
the bytes numpy allocated during the call (tracemalloc: numpy reports its arrays to
it) and how far the process's peak resident memory (``resource.ru_maxrss``) rose
during the call. The goal in issue 6: blocked uses at most 1/50 of full's memory.
BLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise (the children inherit
it); the memory does not depend on it, the times do.

On the course's 2-core machine (numpy 2.4.6) the traced peaks were full 2056.0 MiB and
blocked 11.1 MiB, 1/185; lesson 18 section 7 and the README quote this run.
"""

import os

# One BLAS thread unless the caller says otherwise: on a few shared cores, threads waiting on
# each other, not the arithmetic, decide small calls' times. numpy reads this when it loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

from _measure import machine, mib, random_qkv  # noqa: E402

GOAL = 50  # blocked attention should need at most 1/GOAL of full attention's memory


def child(method, n, d, block_size):
    """Run one method once in this process and print its peaks as one JSON line."""
    import attnlib

    Q, K, V = random_qkv(n, d)
    if method == "full":

        def run():
            return attnlib.attention(Q, K, V)
    else:

        def run():
            return attnlib.blocked_attention(Q, K, V, block_size=block_size)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    tracemalloc.start()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"traced": traced, "rss_rise": rss_after - rss_before, "seconds": seconds}))


def measure(method, n, d, block_size):
    command = [sys.executable, __file__, "--child", method, "--n", str(n), "--d", str(d)]
    command += ["--block-size", str(block_size)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{method} attention failed at n = {n}:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--child", choices=["full", "blocked"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.d, args.block_size)
        return 0

    print(f"machine: {machine()}")
    print(
        f"n = {args.n}, d = {args.d}, float64, blocked_attention block_size = {args.block_size}; "
        "each method in its own process, "
        f"OPENBLAS_NUM_THREADS = {os.environ['OPENBLAS_NUM_THREADS']}"
    )
    print(f"{'method':<8} {'traced peak':>14} {'peak RSS rise':>14} {'time':>9}")
    found = {}
    for method in ("full", "blocked"):
        found[method] = result = measure(method, args.n, args.d, args.block_size)
        print(
            f"{method:<8} {mib(result['traced']):>10.1f} MiB {mib(result['rss_rise']):>10.1f} MiB "
            f"{result['seconds']:>8.2f}s"
        )
    for key, label in (("traced", "traced peak"), ("rss_rise", "peak RSS rise")):
        ratio = found["full"][key] / max(found["blocked"][key], 1)
        verdict = "meets" if ratio >= GOAL else "MISSES"
        print(f"blocked / full ({label}): 1/{ratio:.0f} -> {verdict} the goal of 1/{GOAL}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
