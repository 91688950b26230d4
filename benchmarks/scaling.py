"""How the time and memory of attention grow with the number of tokens n (d = 64).

    python benchmarks/scaling.py              # n = 1024, 2048, 4096, 8192
    python benchmarks/scaling.py --n 512 1024

For each n: the best-of-3 wall time and the peak memory numpy allocates during one
call, for full attention (``attnlib.attention``, which holds the n x n weights) and
for ``attnlib.blocked_attention`` (which holds an n x block_size slice). Each
doubling of n should multiply full attention's time and memory by about 4 (n^2),
and blocked attention's memory by about 2 (n). Lesson 18 quotes this output. BLAS runs
on one thread unless OPENBLAS_NUM_THREADS says otherwise.
"""

import os

# One BLAS thread unless the caller says otherwise: on a few shared cores, threads waiting on
# each other, not the arithmetic, decide small calls' times. numpy reads this when it loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
from functools import partial  # noqa: E402

from _measure import best_seconds, machine, mib, peak_bytes, random_qkv  # noqa: E402

import attnlib  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    print(f"machine: {machine()}")
    print(
        f"d = {args.d}, float64, blocked_attention block_size = {args.block_size}, "
        f"OPENBLAS_NUM_THREADS = {os.environ['OPENBLAS_NUM_THREADS']}"
    )
    print(
        f"{'n':>6} | {'full ms':>9} {'full MiB':>9} | {'blocked ms':>10} {'blocked MiB':>11}"
        f" | {'n x n matrix MiB':>16}"
    )
    rows = []
    for n in args.n:
        Q, K, V = random_qkv(n, args.d)
        full = partial(attnlib.attention, Q, K, V)
        blocked = partial(attnlib.blocked_attention, Q, K, V, block_size=args.block_size)

        row = (
            n,
            best_seconds(full, args.repeat),
            peak_bytes(full),
            best_seconds(blocked, args.repeat),
            peak_bytes(blocked),
        )
        rows.append(row)
        print(
            f"{n:>6} | {row[1] * 1e3:>9.1f} {mib(row[2]):>9.1f} | {row[3] * 1e3:>10.1f} "
            f"{mib(row[4]):>11.1f} | {mib(8 * n * n):>16.1f}"
        )
    if len(rows) > 1:
        (n0, *first), (n1, *last) = rows[0], rows[-1]
        print(f"growth exponents between n = {n0} and n = {n1} (2 means n^2, 1 means n):")
        names = ["full time", "full memory", "blocked time", "blocked memory"]
        for name, a, b in zip(names, first, last, strict=True):
            print(f"  {name:<15} n^{math.log(b / a) / math.log(n1 / n0):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
