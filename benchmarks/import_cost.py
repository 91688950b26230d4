"""Cold-start cost of `import attnlib`, as a ratio to `import numpy`.

attnlib's core needs numpy and nothing heavier, so importing it should cost
little more than numpy itself. Runs each import in a fresh interpreter,
interleaved so that machine noise hits both alike, and prints the ratio of
the medians. Goal: at most 1.3.

    python benchmarks/import_cost.py [--runs 21]
"""

import argparse
import statistics
import subprocess
import sys
import time


def cold_start(statement):
    """Seconds for a fresh interpreter to run one import statement and exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    cold_start("import attnlib")  # warm the file cache and .pyc files once
    numpy_times, attnlib_times = [], []
    for _ in range(args.runs):
        numpy_times.append(cold_start("import numpy"))
        attnlib_times.append(cold_start("import attnlib"))
    numpy_median = statistics.median(numpy_times)
    attnlib_median = statistics.median(attnlib_times)
    ratio = attnlib_median / numpy_median
    print(f"import numpy:   median {numpy_median * 1000:.1f} ms over {args.runs} runs")
    print(f"import attnlib: median {attnlib_median * 1000:.1f} ms over {args.runs} runs")
    print(f"ratio attnlib / numpy: {ratio:.2f} (goal: at most 1.3)")


if __name__ == "__main__":
    main()
