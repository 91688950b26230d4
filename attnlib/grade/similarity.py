"""``--similarity FILE.html``: pairs of students whose answers are unusually alike.

A ranked list for a human to judge, never a verdict. For each exercise, a student's
answer is the code they added to its section with the handed-out stub's lines removed
(:mod:`attnlib.grade.answers`). Each answer is tokenised (Python's ``tokenize``):
comments, blank lines and layout are dropped, every name that is not a keyword, a
builtin or an attribute (``np.sqrt`` keeps ``sqrt``) becomes ``v1, v2, ...`` in order
of first use, so renaming variables or re-indenting changes nothing. The answer's
fingerprints are its runs of :data:`K` tokens.

Evidence is only what is both long and rare:

- an answer of one line, or shorter than :data:`MIN_TOKENS` tokens, counts for nothing
  (a one-line exercise has one short right answer, and two students who both find it
  are not alike for that);
- a run of tokens that more than half the class shares (and at least 3 students) is
  common knowledge and dropped.

A pair's *score* is the share of the smaller side's fingerprints that the other side
also has, over every exercise both answered; pairs with a score of at least
:data:`THRESHOLD` and at least :data:`MIN_SHARED` shared fingerprints are listed,
highest first, each with its matching answers side by side.
"""

import builtins
import html
import io
import keyword
import tokenize
from itertools import combinations
from pathlib import Path

from . import safe

K = 5  # tokens per fingerprint
MIN_LINES = 2  # a one-line answer is no evidence, however long
MIN_TOKENS = 20  # nor is an answer shorter than this
MIN_SHARED = 12  # fingerprints a listed pair must share
THRESHOLD = 0.6  # share of the smaller side's fingerprints
KEEP = set(keyword.kwlist) | set(dir(builtins))
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def normalise(code):
    """The answer's tokens with names renamed in order of first use and layout dropped.

    >>> normalise("total = x + 1  # sum") == normalise("s = y+1")
    True
    >>> normalise("a = np.sqrt(d_k)")
    ['v1', '=', 'v2', '.', 'sqrt', '(', 'v3', ')']
    """
    names, out, previous = {}, [], None
    flat = "\n".join(line.strip() for line in code.splitlines()) + "\n"  # layout is no evidence
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(flat).readline):
            tokens.append(token)
    except (tokenize.TokenError, SyntaxError):
        pass  # an unclosed bracket or string: keep the tokens before it
    for token in tokens:
        if token.type in SKIP or token.type == tokenize.ENDMARKER:
            continue
        text = token.string
        if token.type == tokenize.NAME and text not in KEEP and previous != ".":
            text = names.setdefault(text, f"v{len(names) + 1}")
        out.append(text)
        previous = token.string
    return out


def _lines(code):
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def fingerprints(tokens):
    """The set of runs of :data:`K` tokens."""
    return {tuple(tokens[i : i + K]) for i in range(len(tokens) - K + 1)}


def _answers(report):
    """``{folder: {exercise id: code}}`` from the report."""
    found = {folder: {} for folder in report["by_folder"]}
    for notebook, answers in report.get("answers", {}).items():
        folder = str(Path(notebook).parent)
        for exercise_id, answer in answers.items():
            if answer.get("code", "").strip():
                found.setdefault(folder, {})[exercise_id] = answer["code"]
    return found


def pairs(report):
    """Ranked ``[{"a", "b", "score", "shared", "exercises": [[id, code_a, code_b], ...]}]``."""
    answers = _answers(report)
    prints = {
        folder: {
            i: fingerprints(tokens)
            for i, code in found.items()
            if _lines(code) >= MIN_LINES and len(tokens := normalise(code)) >= MIN_TOKENS
        }
        for folder, found in answers.items()
    }
    students = len(prints)
    common_at = max(3, students / 2)  # shared by more students than this: common knowledge
    counts = {}
    for found in prints.values():
        for i, fps in found.items():
            for fp in fps:
                counts[(i, fp)] = counts.get((i, fp), 0) + 1
    for found in prints.values():
        for i in found:
            found[i] = {fp for fp in found[i] if counts[(i, fp)] <= common_at}
    listed = []
    for a, b in combinations(prints, 2):
        shared = smaller = 0
        matching = []
        for i in prints[a].keys() & prints[b].keys():
            both = len(prints[a][i] & prints[b][i])
            shared += both
            smaller += min(len(prints[a][i]), len(prints[b][i]))
            if both * 2 >= min(len(prints[a][i]), len(prints[b][i])):
                matching.append([i, answers[a][i], answers[b][i]])
        score = shared / smaller if smaller else 0.0
        if score >= THRESHOLD and shared >= MIN_SHARED:
            matching.sort()
            listed.append(
                {"a": a, "b": b, "score": round(score, 3), "shared": shared, "exercises": matching}
            )
    listed.sort(key=lambda p: (-p["score"], -p["shared"], p["a"], p["b"]))
    return listed


def _e(text):
    return html.escape(safe.text(text), quote=True)  # any bytes: escaped, never a traceback


def page(found):
    """The HTML report: ranked pairs, matching answers side by side."""
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Similar answers</title>',
        "<style>body { font-family: sans-serif; margin: 2em; } table { border-collapse: "
        "collapse; width: 100%; } td, th { border: 1px solid #999; padding: .4em; "
        "vertical-align: top; } pre { white-space: pre-wrap; margin: 0; }</style>",
        "</head><body><h1>Pairs of students with unusually alike answers</h1>",
        "<p>For a person to judge: alike answers are a reason to look, not a finding. "
        "The handed-out code is removed, names and layout are ignored, and answers that are "
        "short or common in the class do not count.</p>",
    ]
    if not found:
        lines.append("<p>No pair is above the threshold.</p>")
    for n, p in enumerate(found, start=1):
        lines.append(
            f"<h2>{n}. {_e(Path(p['a']).name)} and {_e(Path(p['b']).name)}: "
            f"{p['score']:.0%} alike ({p['shared']} shared runs of {K} tokens)</h2>"
        )
        lines.append(f"<table><tr><th>Exercise</th><th>{_e(p['a'])}</th><th>{_e(p['b'])}</th></tr>")
        for exercise_id, code_a, code_b in p["exercises"]:
            lines.append(
                f"<tr><td>{_e(exercise_id)}</td><td><pre>{_e(code_a)}</pre></td>"
                f"<td><pre>{_e(code_b)}</pre></td></tr>"
            )
        lines.append("</table>")
    lines.append("</body></html>")
    return "\n".join(lines) + "\n"


def write(report, path):
    """Write the HTML report; return the ranked pairs."""
    found = pairs(report)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(page(found).encode("utf-8"))
    return found
