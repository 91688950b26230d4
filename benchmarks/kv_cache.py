"""Time of one decoding step with and without a key-value cache, as n grows (lesson 25).

    python benchmarks/kv_cache.py                 # n = 256, 512, 1024, 2048
    python benchmarks/kv_cache.py --n 128 256

One step for the token after n - 1 others, d_model = d = 64, float64. Without a cache the
step projects all n tokens and runs causal attention over them, keeping the last row; with
a cache (``attnlib.KVCache``) it projects the new token, appends its key and value and
attends with one query. Best of ``--repeat`` wall times. Lesson 25 counts the ratio of the
multiplications as exactly n; the measured ratio and each time's growth exponent are printed.
For steadier numbers on a shared machine, pin BLAS to one thread:
``OPENBLAS_NUM_THREADS=1 python benchmarks/kv_cache.py``.
"""

import argparse
import math

import numpy as np
from _measure import best_seconds, machine

import attnlib


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    d = args.d
    W_Q, W_K, W_V = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
    X = rng.normal(size=(max(args.n), d))  # (n, d_model)

    def without_cache(X_seen):  # every token again; the last output row
        Q, K, V = X_seen @ W_Q, X_seen @ W_K, X_seen @ W_V
        return attnlib.attention(Q, K, V, mask=attnlib.causal_mask(len(X_seen)))[0][-1]

    def with_cache(x_new, cache):  # the new token only
        cache.append(x_new @ W_K, x_new @ W_V)
        return attnlib.attention((x_new @ W_Q)[None], cache.keys, cache.values)[0][0]

    print(f"machine: {machine()}")
    print(f"d_model = d = {d}, float64, best of {args.repeat}")
    print(f"{'n':>6} | {'without ms':>10} {'with ms':>9} | {'ratio':>7} {'counted (n)':>11}")
    rows = []
    for n in args.n:
        cache = attnlib.KVCache(n + 2 * args.repeat + 2, d, d)
        cache.append(X[: n - 1] @ W_K, X[: n - 1] @ W_V)  # the n - 1 tokens before this one
        assert np.allclose(without_cache(X[:n]), with_cache(X[n - 1], cache))
        slow = best_seconds(lambda n=n: without_cache(X[:n]), args.repeat)
        fast = best_seconds(lambda n=n, c=cache: with_cache(X[n - 1], c), args.repeat)
        rows.append((n, slow, fast))
        print(f"{n:>6} | {slow * 1e3:>10.3f} {fast * 1e3:>9.3f} | {slow / fast:>7.0f} {n:>11}")
    if len(rows) > 1:
        (n0, slow0, fast0), (n1, slow1, fast1) = rows[0], rows[-1]
        print(f"growth exponents between n = {n0} and n = {n1} (2 means n^2, 1 means n):")
        print(f"  without a cache n^{math.log(slow1 / slow0) / math.log(n1 / n0):.2f}")
        print(f"  with a cache    n^{math.log(fast1 / fast0) / math.log(n1 / n0):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
