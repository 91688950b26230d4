"""What running a learner's function in a child process costs ``check()``.

``check()`` forks a child for every function answer (so no answer can hang, exit or
redirect the learner's session). This prints, for every exercise of the course, the time
of ``check(id, reference)`` against the time of the same judging with the function called
in-process, and the time of one bare fork round trip. Run: ``.venv/bin/python
benchmarks/check_overhead.py``.
"""

import statistics
import time

from attnlib.selfcheck import check, registry, wire
from attnlib.selfcheck.run import _call, _record, call_cases

REPEAT = 5


def best_of(function, repeat=REPEAT):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    fork = best_of(lambda: call_cases(lambda: None, [()]), repeat=20)
    print(f"one fork round trip (call_cases of a no-op): {fork * 1e3:.1f} ms")
    rows = {"function": [], "value": []}
    for exercise in registry.exercises().values():
        if exercise.kind == "function":
            reference = exercise.reference
            forked = best_of(lambda e=exercise: check(e.id, e.reference, quiet=True))

            def in_process(e=exercise, f=reference):
                import json

                records = [_record(json.dumps(_call(f, args))) for args in e.cases]
                return e.judge(records)

            direct = best_of(in_process)
            rows["function"].append((exercise.id, forked, direct))
        else:
            data = wire.decode(wire.encode(exercise.expected))
            through = best_of(lambda e=exercise: check(e.id, e.expected, quiet=True))
            direct = best_of(lambda e=exercise, d=data: e.judge(d))
            rows["value"].append((exercise.id, through, direct))
    for kind, found in rows.items():
        checked = statistics.mean(r[1] for r in found)
        direct = statistics.mean(r[2] for r in found)
        print(
            f"{kind:8s} exercises ({len(found)}): check() {checked * 1e3:6.2f} ms, "
            f"judging in-process {direct * 1e3:6.2f} ms, ratio {checked / direct:4.1f}x, "
            f"added {(checked - direct) * 1e3:5.2f} ms per check"
        )
    slowest = max(rows["function"], key=lambda r: r[1])
    print(f"slowest function check: {slowest[0]} {slowest[1] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
