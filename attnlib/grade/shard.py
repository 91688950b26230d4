"""``--shard i/N``: grade a deterministic 1/N of a class, for classes larger than a machine.

Every machine is given the same paths (``handed-in/*/``) and its own ``i``. The student
folders are sorted by name (bytes of the path, not the shell's locale) and shard ``i``
takes the ones at positions ``i - 1``, ``i - 1 + N``, ``i - 1 + 2N``, ...: the shards
are disjoint, together hold every folder, and differ in size by at most one folder.
``attnlib report`` merges their JSON-lines files (:mod:`attnlib.grade.report`).

>>> groups = [(f, []) for f in ("carol", "alice", "bob", "dave")]
>>> [f for f, _ in select(groups, (1, 3))], [f for f, _ in select(groups, (2, 3))]
(['alice', 'dave'], ['bob'])
>>> parse("2/3"), parse("3/3")
((2, 3), (3, 3))
"""


def parse(text):
    """``"i/N"`` -> ``(i, N)`` with ``1 <= i <= N``; ValueError naming the option otherwise."""
    try:
        index, count = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise ValueError(f"--shard: expected i/N such as 2/3, got {text!r}.") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard: i must be between 1 and N, got {index}/{count}.")
    return index, count


def select(groups, shard):
    """The groups ``[(folder, notebooks), ...]`` of shard ``(i, N)``, in their given order."""
    if shard is None:
        return list(groups)
    index, count = shard
    ranked = sorted(str(folder).encode("utf-8", "surrogateescape") for folder, _ in groups)
    mine = set(ranked[index - 1 :: count])
    return [g for g in groups if str(g[0]).encode("utf-8", "surrogateescape") in mine]


def run_info(groups, shard):
    """What a merge needs to know about the whole run: every group, in order, and the shard."""
    return {
        "groups": [[str(folder), [str(p) for p in found]] for folder, found in groups],
        "shard": list(shard) if shard else None,
    }
