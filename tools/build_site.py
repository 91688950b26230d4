"""Build the course website from the stored notebook outputs, with no network.

    python tools/build_site.py [--out build/site]      (or `make site`)

Nothing is executed: each notebook in notebooks/, exercises/ and solutions/ is
turned into HTML by nbconvert (its lab template, through the small template in
tools/site/course/ that drops require.js, the widget renderer and mermaid,
which the lab template would load from a CDN). Pages link to each other as
``.html``; links to other files of the repository point at the repository's
address from pyproject.toml. Figures are embedded in the pages. MathJax 2 is
copied from the jupyter-server-mathjax package into ``mathjax/`` and set up
for its STIX-Web fonts. A widget output shows its text fallback (there is no
kernel on a website) as a note that says what the widget does (from the
README's widgets table) and where to run it live. A figure's alt text comes
from its output's metadata (``metadata["image/png"]["alt"]``). The landing
page is for learners: the README's introduction, how to start, the other
routes and the course map (a table with a row per lesson, whose "open in
Colab" column comes from the README); maintainer notes are CONTRIBUTING.md,
built as ``contributing.html``. The build stops when a README table would not
render as a table (mistune drops a table whose row has a cell too few).

For every reader: a page's ``<title>`` is plain text (TeX turned into characters,
``$\\sqrt{d_k}$`` -> ``√d_k``); a skip link comes before the sidebar; sidebar links
name their lesson ("exercises for lesson 03", the lesson number hidden from sight
but read out); a solution page is titled as solutions and opens with a notice that
it shows the answers. A link to a file git ignores (a learner's ``my-work/`` copy,
which exists only on the learner's machine) is left as text, never a link into the
repository. MathJax is set up so that it requests nothing it cannot load, under
``file://`` too (its blank test font is a ``local()`` font, not ``about:blank``).

The site is plain files: open ``build/site/index.html`` or serve the folder
(``python -m http.server -d build/site``).
"""

import argparse
import functools
import html
import html.parser
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from colab_cell import BRANCH, CELL_ID, binder_url, colab_url, lite_url, repository_url  # noqa: E402

OUT = ROOT / "build" / "site"
KINDS = ("notebooks", "exercises", "solutions")
KIND_LABEL = {"notebooks": "lesson", "exercises": "exercises", "solutions": "solutions"}
MAIN_ID = "course-main"  # the skip link's target
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# what nbconvert's HTML exporter prefers, without the widget view (no kernel, no widget state)
DATA_PRIORITY = [
    "text/html",
    "text/markdown",
    "image/svg+xml",
    "text/latex",
    "image/png",
    "image/jpeg",
    "text/plain",
]

MATHJAX_CONFIG = """<script type="text/x-mathjax-config">
window.courseMath = {errors: [], done: false};
MathJax.Hub.Config({
  TeX: {equationNumbers: {autoNumber: "AMS", useLabelIds: true}},
  tex2jax: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]],
            displayMath: [["$$", "$$"], ["\\\\[", "\\\\]"]],
            processEscapes: true, processEnvironments: true},
  // STIX-Web is the only font jupyter-server-mathjax ships. MathJax measures fonts against a
  // blank one at url('about:blank'), which a page opened from file:// may not load (two
  // console errors on every page): a local() font that no system has measures the same way
  // and is never requested.
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null,
               styles: {"@font-face": {"font-family": "MathJax_Blank",
                                       src: "local('MathJax_Blank_none')"}}},
  displayAlign: "center", messageStyle: "none"
});
MathJax.Hub.Register.MessageHook("TeX Jax - parse error",
  function (m) { window.courseMath.errors.push(String(m[1])); });
MathJax.Hub.Register.MessageHook("Math Processing Error",
  function (m) { window.courseMath.errors.push("Math Processing Error: " + String(m[2])); });
MathJax.Hub.Register.StartupHook("End", function () {
  MathJax.Hub.Queue(function () { window.courseMath.done = true; });
});
</script>
<script src="{root}mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"></script>"""

CSS = """
/* JupyterLab's light theme, darkened where its text is fainter than 4.5:1 on the code cells'
   grey (#f5f5f5; WCAG AA, as the accessibility audit of `make test-site` checks): each colour
   is the theme's own, scaled towards black until it reaches about 4.9:1 */
body {
  --jp-cell-prompt-not-active-font-color: #696969;  /* grey 700 */
  --jp-cell-prompt-not-active-opacity: 1;  /* 0.5: the grey above at half strength */
  --jp-cell-inprompt-font-color: #296ea7;  /* #307fc1 */
  --jp-cell-outprompt-font-color: #a95036;  /* #bf5b3d */
  --jp-mirror-editor-atom-color: #6161b7;  /* #88f */
  --jp-mirror-editor-number-color: #007d00;  /* #080 */
  --jp-mirror-editor-variable-3-color: #007a4c;  /* #085 */
  --jp-mirror-editor-operator-color: #9f1fef;  /* #a2f */
  --jp-mirror-editor-comment-color: #3a7474;  /* #408080 */
  --jp-mirror-editor-meta-color: #9f1fef;  /* #a2f */
  --jp-mirror-editor-bracket-color: #6c6c54;  /* #997 */
  --jp-mirror-editor-quote-color: #007d00;  /* #090 */
  --jp-mirror-editor-error-color: #d80000;  /* #f00 */
  --jp-mirror-editor-hr-color: #696969;  /* #999 */
}
.course-nav { position: fixed; top: 0; left: 0; bottom: 0; width: 15rem; overflow-y: auto;
  padding: 1rem; background: #f6f7f9; border-right: 1px solid #ddd; font: 14px/1.4 sans-serif; }
.course-nav a { text-decoration: none; color: #1a4e8a; }
.course-nav .home { display: block; font-weight: bold; margin-bottom: 0.8rem; }
.course-nav ol { list-style: none; padding: 0; margin: 0; }
.course-nav li { margin: 0.15rem 0 0.45rem; }
.course-nav .sub { font-size: 12px; margin-left: 1.6rem; color: #666; }
.course-nav .current { font-weight: bold; color: #000; }
/* read out, not shown: which lesson a sidebar link belongs to */
.course-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; }
/* the first thing a keyboard reaches: past the sidebar to the page itself */
.course-skip { position: absolute; left: -100rem; top: 0.5rem; z-index: 10; padding: 0.5rem 1rem;
  background: #fff; color: #0b57a6; border: 2px solid #0b57a6; font: 15px sans-serif; }
.course-skip:focus { left: 0.5rem; }
.course-notice { font: 15px/1.5 sans-serif; border: 2px solid #a15c00; background: #fff7e6;
  padding: 0.6rem 0.9rem; margin: 0 0 1rem; }
body.course-page main, body.course-home main { margin-left: 17rem; max-width: 60rem;
  padding: 1rem 2rem; }
.course-pager { display: flex; justify-content: space-between; margin: 2rem 0 3rem;
  padding-top: 1rem; border-top: 1px solid #ddd; font: 15px sans-serif; }
.course-open { font: 13px sans-serif; margin: 0 0 1rem; }
/* links look like links: underlined and blue, in the text of every page (the lab template's
   `.jp-RenderedHTMLCommon a:link` would take the underline off, so these are more specific) */
main a:link, main a:visited, main .jp-RenderedHTMLCommon a:link,
main .jp-RenderedHTMLCommon a:visited { color: #0b57a6; text-decoration: underline; }
main a:hover, main .jp-RenderedHTMLCommon a:hover { color: #083d75; }
main a.anchor-link:link, main .jp-RenderedHTMLCommon a.anchor-link:link { text-decoration: none; }
/* code inside a link (a file name) is a link too: the link's colour, underlined itself */
main a:link code, main a:visited code, main .jp-RenderedHTMLCommon a:link code,
main .jp-RenderedHTMLCommon a:visited code { color: inherit; text-decoration: underline; }
.course-widget { font: 14px/1.5 sans-serif; border: 1px dashed #8aa4c8; background: #f3f7fc;
  padding: 0.6rem 0.8rem; margin: 0.3rem 0; }
body.course-home { font: 16px/1.5 sans-serif; }
body.course-home a.anchor-link { display: none; }
body.course-home table { border-collapse: collapse; font-size: 14px; }
body.course-home th, body.course-home td { border: 1px solid #ddd; padding: 0.3rem 0.5rem;
  vertical-align: top; }
@media (max-width: 800px) {
  .course-nav { position: static; width: auto; border-right: none; }
  body.course-page main, body.course-home main { margin-left: 0; }
}
"""


# nbconvert writes this on an <img> with no alt; it is no description
NO_ALT = "No description has been provided for this image"
LEARNER_SECTIONS = ("Quickstart", "Other ways to take the course", "Course map")


def pages():
    """[(kind, stem, source path)] in reading order: lessons, then exercises, then solutions."""
    return [(k, p.stem, p) for k in KINDS for p in sorted((ROOT / k).glob("[0-9]*.ipynb"))]


def title_of(nb, stem):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return stem


# TeX a title may hold, as the characters a browser tab can show
TEX_SYMBOLS = {r"\times": "×", r"\top": "ᵀ", r"\cdot": "·", r"\le": "≤", r"\ge": "≥"}


def plain_title(title):
    r"""A heading as plain text for ``<title>``: no TeX, no markdown marks.

    >>> plain_title(r"08 · Why $\sqrt{d_k}$: spread and saturation")
    '08 · Why √d_k: spread and saturation'
    >>> plain_title(r"Scores $Q K^\top$ and `attnlib.softmax`, **bold**")
    'Scores Q Kᵀ and attnlib.softmax, bold'
    >>> plain_title(r"$\sqrt{d_k + 1}$ and $x_{ij}$")
    '√(d_k + 1) and x_ij'
    """

    def root(match):
        inside = match.group(1)
        return "√" + (inside if re.fullmatch(r"\w+", inside) else f"({inside})")

    def tex(match):
        text = re.sub(r"\\sqrt\{([^{}]*)\}", root, match.group(1))
        for command, char in TEX_SYMBOLS.items():
            text = text.replace(command, char)
        text = re.sub(r"\^\s*(ᵀ)", r"\1", text)
        text = re.sub(r"\\[a-zA-Z]+\s*", "", text)  # any other command: dropped
        return text.replace("{", "").replace("}", "")

    text = re.sub(r"\$([^$]+)\$", tex, title)
    text = re.sub(r"\*\*|__|`", "", text)
    return " ".join(text.split())


def solution_title(title):
    r"""The title of a solution page: its notebook shares the exercises' heading.

    >>> solution_title(r"08 · Exercises: why $\sqrt{d_k}$")
    '08 · Solutions: why $\\sqrt{d_k}$'
    >>> solution_title("Softmax practice")
    'Solutions: Softmax practice'
    """
    new, n = re.subn(r"\bExercises\b", "Solutions", title, count=1)
    return new if n else f"Solutions: {title}"


def solution_notice(page, exercise_page, lesson):
    """The box at the top of a solution page: these are the answers; try the exercises first."""
    number = html.escape(lesson)
    try_first = (
        f' Try them yourself first: <a href="{rel(page, exercise_page)}">the exercises for '
        f"lesson {number}</a>."
        if exercise_page
        else ""
    )
    return (
        f'<div class="course-notice" role="note"><p><strong>Solutions: this page shows the '
        f"answers</strong> to lesson {number}'s exercises, worked out.{try_first}</p></div>"
    )


def rel(from_page, to_page):
    """A relative link from one site path to another (both like ``notebooks/03_x.html``)."""
    depth = from_page.count("/")
    return "../" * depth + to_page


@functools.lru_cache(maxsize=None)
def git_ignored(path):
    """True when git ignores ``path`` (a repository path such as ``my-work/05_softmax.ipynb``:
    the learner's copy, on the learner's machine only); False outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, capture_output=True
        )
    except OSError:
        return False
    return done.returncode == 0


def unlink_ignored(text, page):
    """Links to files git ignores, left as their text: such a file is in no repository and
    on no website (``[my-work/05.ipynb](../my-work/05.ipynb)`` -> ``my-work/05.ipynb``)."""
    folder = Path(page).parent

    def fix(match):
        target = match.group(2)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
            return match.group(0)
        path = target.partition("#")[0]
        resolved = Path(*_normal((folder / path).parts)).as_posix()
        return match.group(3) if git_ignored(resolved) else match.group(0)

    return re.sub(r'<a\b[^>]*?\bhref=(["\'])([^"\']+)\1[^>]*>(.*?)</a>', fix, text, flags=re.S)


def rewrite_links(text, page, built, out=OUT):
    """Point ``.ipynb`` links at the built pages and other repository files at the repository.

    ``page`` is the site path of the page holding the links; ``built`` the set of
    repository paths (``notebooks/03_x.ipynb``...) that became pages. Links to the
    site's own files (``course.css``, ``contributing.html``...) stay as they are; a link
    to a file git ignores becomes its text (:func:`unlink_ignored`); a folder of the
    repository is linked as a tree, a file as a blob.
    """
    repo = repository_url()
    folder = Path(page).parent
    site = {p[: -len(".ipynb")] + ".html" for p in built} | {"index.html", "contributing.html"}
    text = unlink_ignored(text, page)

    def fix(match):
        attr, quote, target = match.group(1), match.group(2), match.group(3)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/|data:)", target, re.I):
            return match.group(0)
        path, _, fragment = target.partition("#")
        resolved = Path(*_normal((folder / path).parts)).as_posix()
        if resolved in site or (Path(out) / resolved).is_file():
            return match.group(0)
        if resolved in built:
            new = rel(page, resolved[: -len(".ipynb")] + ".html")
        elif resolved == "README.md":
            new = rel(page, "index.html")
        else:
            kind = "tree" if (ROOT / resolved).is_dir() else "blob"
            new = f"{repo}/{kind}/{BRANCH}/{resolved}"
        if fragment:
            new += "#" + fragment
        return f"{attr}={quote}{html.escape(new, quote=True)}{quote}"

    return re.sub(r'\b(href)=(["\'])([^"\']+)\2', fix, text)


def _normal(parts):
    out = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part not in ("", "."):
            out.append(part)
    return out or ["."]


def nav_html(page, entries, current):
    """A skip link, then the sidebar: every lesson, each with its exercises and solutions
    (links named for their lesson: "exercises for lesson 03", the number read out only)."""
    lessons = [e for e in entries if e["kind"] == "notebooks"]
    by_stem = {(e["kind"], e["stem"]): e for e in entries}
    items = []
    for lesson in lessons:
        cls = ' class="current"' if lesson is current else ""
        sub = []
        for kind in ("exercises", "solutions"):
            other = by_stem.get((kind, lesson["stem"]))
            if other:
                c = ' class="current"' if other is current else ""
                which = f'<span class="course-hidden"> for lesson {lesson["stem"][:2]}</span>'
                sub.append(f'<a{c} href="{rel(page, other["page"])}">{KIND_LABEL[kind]}{which}</a>')
        subline = f'<div class="sub">{" · ".join(sub)}</div>' if sub else ""
        items.append(
            f'<li><a{cls} href="{rel(page, lesson["page"])}">{html.escape(lesson["title"])}</a>'
            f"{subline}</li>"
        )
    what = "page" if current is None else KIND_LABEL[current["kind"]]
    return (
        f'<a class="course-skip" href="#{MAIN_ID}">Skip to the {what}</a>'
        f'<nav class="course-nav" aria-label="Course"><a class="home" '
        f'href="{rel(page, "index.html")}">Attention by hand</a><ol>{"".join(items)}</ol>'
        f'<p class="sub"><a href="{rel(page, "contributing.html")}">working on the course</a>'
        "</p></nav>"
    )


def pager_html(page, entries, entry):
    """Previous / next page of the same kind, and where to go from a lesson."""
    same = [e for e in entries if e["kind"] == entry["kind"]]
    i = same.index(entry)

    def link(other, text, how):
        return f'<a rel="{how}" href="{rel(page, other["page"])}">{text}</a>'

    home = {"page": "index.html"}
    if i > 0:
        prev = link(same[i - 1], f"← {html.escape(same[i - 1]['title'])}", "prev")
    else:
        prev = link(home, "← course map", "home")
    if i + 1 < len(same):
        nxt = link(same[i + 1], f"{html.escape(same[i + 1]['title'])} →", "next")
    else:
        nxt = link(home, "course map →", "home")
    return f'<nav class="course-pager">{prev}{nxt}</nav>'


def open_line(entry):
    source = f"{entry['kind']}/{entry['stem']}.ipynb"
    return (
        f'<p class="course-open">Run this notebook: <a href="{colab_url(source)}">open in Colab</a>'
        f' · <a href="{binder_url(source)}">launch on Binder</a>'
        f' · <a href="{lite_url(source)}">run in your browser</a> (nothing to install)'
        " · or clone the course and <code>make lab</code></p>"
    )


def markdown_tables(text):
    """Every pipe table of a markdown text, outside fenced code: [(first line number, lines)]."""
    tables, block, fenced = [], [], False
    lines = text.splitlines() + [""]
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.lstrip().startswith("|"):
            block.append((number, line))
            continue
        if len(block) >= 2 and re.fullmatch(
            r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?", block[1][1].strip()
        ):
            tables.append((block[0][0], [b[1] for b in block]))
        block = []
    return tables


def table_cells(line):
    """The cells of one table row: '| a | b \\| c |' -> ['a', 'b \\| c']."""
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]] if line.strip().endswith("|") else cells[1:]


def table_problems(text, where="README.md"):
    """Why each markdown table of ``text`` would not render as an HTML table (empty: all do).

    Each table is rendered alone with nbconvert's markdown converter (mistune), which
    drops a table to plain text when a row has fewer cells than the header.

    >>> table_problems("| a | b |\\n|---|---|\\n| 1 | 2 |\\n")
    []
    >>> table_problems("| a | b |\\n|---|---|\\n| 1 |\\n")
    ['README.md line 1: table not rendered as a table; line 3 has 1 cells, the header 2']
    """
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    problems = []
    for start, lines in markdown_tables(text):
        rendered = markdown2html_mistune("\n".join(lines) + "\n")
        rows = len(re.findall(r"<tr\b", rendered))
        if "<table" in rendered and rows == len(lines) - 1:
            continue
        header = len(table_cells(lines[0]))
        wrong = [
            f"line {start + i} has {len(table_cells(line))} cells, the header {header}"
            for i, line in enumerate(lines[2:], 2)
            if len(table_cells(line)) != header
        ]
        problems.append(
            f"{where} line {start}: table not rendered as a table"
            + (f"; {'; '.join(wrong)}" if wrong else f" ({rows} of {len(lines) - 1} rows)")
        )
    return problems


def widget_descriptions(readme):
    """{widget name: (what you do, what updates)} from the README's widgets table."""
    found = {}
    for _, lines in markdown_tables(readme):
        header = [c.lower() for c in table_cells(lines[0])]
        if header[:1] != ["widget"] or "what you do" not in header:
            continue
        do, updates = header.index("what you do"), header.index("what updates")
        for line in lines[2:]:
            cells = table_cells(line)
            name = re.sub(r"[`()]", "", cells[0]).strip()
            found[name] = (cells[do], cells[updates])
    return found


def widget_note(name, entry, descriptions):
    """What a widget does and where to run it live, in place of the widget on the site."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    if name not in descriptions:
        raise ValueError(
            f"build_site: widget {name!r} in {entry['source']} is not in the README's widgets "
            f"table (it has {sorted(descriptions)}); add a row that says what it does"
        )
    do, updates = descriptions[name]
    source = f"{entry['kind']}/{entry['stem']}.ipynb"
    what = markdown2html_mistune(f"{do}; {updates} update as you do.").strip()
    what = re.sub(r"^<p>|</p>$", "", what)
    return (
        f'<div class="course-widget"><p><strong>Live widget <code>{html.escape(name)}()</code>'
        f"</strong>: {what}</p><p>A website has no Python to run it; the figure above shows "
        "its starting state. To use it, run this notebook live: "
        f'<a href="{colab_url(source)}">open it in Colab</a>, '
        f'<a href="{binder_url(source)}">launch it on Binder</a>, or clone the course and run '
        f"<code>make lab</code>, then run the cell.</p></div>"
    )


def widget_name(output):
    """'geometry' from a widget output's text fallback ('geometry: A live widget: ...')."""
    text = output.get("data", {}).get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else text
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:", text)
    return match.group(1) if match else "widget"


class _Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.found.append(dict(attrs))


def images_without_alt(text):
    """Every ``<img>`` of an HTML page with no real alt text: missing, blank or nbconvert's
    "No description has been provided for this image". Returns a line per image.

    >>> images_without_alt('<img src="a.png" alt="a bar chart"><img src="b.png">')
    ['image 2 (b.png): no alt text']
    """
    parser = _Images()
    parser.feed(text)
    missing = []
    for i, attrs in enumerate(parser.found, 1):
        alt = (attrs.get("alt") or "").strip()
        if not alt or alt == NO_ALT:
            src = (attrs.get("src") or "")[:40]
            missing.append(
                f"image {i} ({src}): " + ("nbconvert's placeholder" if alt else "no alt text")
            )
    return missing


def convert(entries, out):
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config()
    config.NbConvertBase.display_data_priority = DATA_PRIORITY
    config.HTMLExporter.embed_images = True  # markdown images become data: URIs
    exporter = HTMLExporter(
        config=config, template_name="course", extra_template_basedirs=[str(HERE / "site")]
    )
    built = {e["source"] for e in entries}
    exercise_pages = {e["stem"]: e["page"] for e in entries if e["kind"] == "exercises"}
    descriptions = widget_descriptions((ROOT / "README.md").read_text(encoding="utf-8"))
    for entry in entries:
        nb = entry["nb"]
        nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]  # Colab's own install cell
        nb.metadata.pop("widgets", None)  # saved widget state would pull a renderer from a CDN
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                if WIDGET_VIEW in output.get("data", {}):
                    # no kernel here: say what the widget does and where it runs live
                    note = widget_note(widget_name(output), entry, descriptions)
                    output["data"] = {"text/html": note}
        page = entry["page"]
        root = rel(page, "")
        notice = ""
        if entry["kind"] == "solutions":
            notice = solution_notice(page, exercise_pages.get(entry["stem"]), entry["stem"][:2])
            retitle(nb, entry["title"])
        resources = {
            "metadata": {
                "name": plain_title(entry["title"]),
                "path": str((ROOT / entry["source"]).parent),
            },
            "course": {
                "root": root,
                "mathjax": MATHJAX_CONFIG.replace("{root}", root),
                "nav": nav_html(page, entries, entry),
                "main_id": MAIN_ID,
                "notice": notice,
                "pager": open_line(entry) + pager_html(page, entries, entry),
            },
        }
        body, _ = exporter.from_notebook_node(nb, resources=resources)
        target = out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rewrite_links(body, page, built, out), encoding="utf-8")


def retitle(nb, title):
    """Give the notebook's first ``# `` heading the page's title (a solution notebook's
    heading is the exercises' own)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^#\s+.+$", cell.source, re.M):
            cell.source = re.sub(
                r"^#\s+.+$", lambda _: f"# {title}", cell.source, count=1, flags=re.M
            )
            return


def readme_sections(text, wanted):
    """The README's title and introduction, then its ``## `` sections named in ``wanted``."""
    parts = re.split(r"(?m)^(?=## )", text)
    keep = [parts[0]]
    for part in parts[1:]:
        heading = part.splitlines()[0][3:].strip()
        if heading in wanted:
            keep.append(part)
    return "".join(keep)


def markdown_page(entries, out, name, title, text, lead=""):
    """A page of the site from markdown (the landing page, contributing.html)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    problems = table_problems(text)
    if problems:
        raise ValueError("build_site: " + "\n".join(problems))
    body = markdown2html_mistune(text)
    body = rewrite_links(body, name, {e["source"] for e in entries}, out)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(plain_title(title))}</title>
<link rel="stylesheet" href="course.css">
{MATHJAX_CONFIG.replace("{root}", "")}
</head>
<body class="course-home">
{nav_html(name, entries, None)}
<main id="{MAIN_ID}">
{lead}
{body}
</main></body></html>
"""
    (out / name).write_text(page, encoding="utf-8")


def landing(entries, out):
    """index.html, for learners: what the course is, how to start, the other routes, the map."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    text = readme_sections(readme, set(LEARNER_SECTIONS))
    text = text.replace("](CONTRIBUTING.md)", "](contributing.html)")
    lead = (
        '<p class="course-open">Start with <a href="notebooks/00_start_here.html">00 start '
        f'here</a> · <a href="{binder_url()}">launch the course on Binder</a></p>'
    )
    markdown_page(entries, out, "index.html", "Attention by hand: a course", text, lead)
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    contributing = contributing.replace("](README.md)", "](index.html)")
    markdown_page(entries, out, "contributing.html", "Working on the course", contributing)


def copy_mathjax(out):
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(static, out / "mathjax", ignore=shutil.ignore_patterns("*.md"))


def build(out=OUT):
    """Build the whole site into ``out`` (emptied first); return the number of pages."""
    import nbformat

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    entries = []
    for kind, stem, path in pages():
        nb = nbformat.read(path, as_version=4)
        source = f"{kind}/{stem}.ipynb"
        entries.append(
            {
                "kind": kind,
                "stem": stem,
                "source": source,
                "page": f"{kind}/{stem}.html",
                "title": title_of(nb, stem)
                if kind != "solutions"
                else solution_title(title_of(nb, stem)),
                "nb": nb,
            }
        )
    copy_mathjax(out)
    (out / "course.css").write_text(CSS, encoding="utf-8")
    convert(entries, out)
    landing(entries, out)
    return len(entries) + 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (emptied first)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    n = build(args.out)
    no_alt = sum(
        len(images_without_alt(p.read_text(encoding="utf-8"))) for p in args.out.rglob("*.html")
    )
    print(
        f"site: {n} pages in {args.out} ({time.perf_counter() - start:.1f} s); "
        f"{no_alt} figures without alt text"
    )


if __name__ == "__main__":
    main()
