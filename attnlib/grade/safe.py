"""Text a student controls, made safe to write: any bytes, any spreadsheet.

A folder name can hold bytes that are not UTF-8 (Python gives them as lone surrogates,
``\\udce9``), a notebook's markdown can hold a lone surrogate of its own (JSON allows
``"\\ud800"``), and a name such as ``=HYPERLINK(...)`` is a formula to a spreadsheet
(the OWASP rule: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return). Every export writes such text through these functions, so it is written,
escaped, whatever it holds:

- :func:`text`: the same text where a lone surrogate becomes ``\\xNN`` (an undecodable
  byte) or ``\\uDNNN`` (any other), so that it encodes as UTF-8;
- :func:`cell`: a CSV text cell: one line (:func:`attnlib.grade.intake.escape`), and a
  leading ``'`` when a spreadsheet would read it as a formula. Numbers the grader writes
  itself (``-0.5`` points) are not text cells and are never changed.

>>> text("caf\\udce9 \\ud800"), cell("=1+1"), cell("-2 points"), cell("alice")
('caf\\\\xe9 \\\\ud800', "'=1+1", "'-2 points", 'alice')
>>> uncell(cell("@SUM(1)")), uncell("'quoted by its owner")
('@SUM(1)', "'quoted by its owner")
"""

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text(value):
    """``str(value)`` with every lone surrogate written as a backslash escape."""
    value = str(value)
    if value.isascii() or not any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        return value
    out = []
    for ch in value:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def cell(value):
    """A spreadsheet text cell: one escaped line, quoted when it would start a formula."""
    from .intake import escape

    line = escape(value)
    return "'" + line if line.startswith(FORMULA_START) else line


def uncell(value):
    """The text :func:`cell` was given, from a cell it wrote (for files read back)."""
    if value.startswith("'") and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def risky(name):
    """Why a name is written otherwise than it is (``""`` when it is written as it is)."""
    from .intake import escape

    shown = escape(name)
    if shown != str(name):
        return f"written as {shown} (bytes that are not UTF-8 or control characters)"
    if shown.startswith(FORMULA_START):
        return f"written as '{shown} (a spreadsheet would read it as a formula)"
    return ""
