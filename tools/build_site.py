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
kernel on a website). The landing page holds the README's introduction and
its course map, whose "open in Colab" column comes from the README.

The site is plain files: open ``build/site/index.html`` or serve the folder
(``python -m http.server -d build/site``).
"""

import argparse
import html
import re
import shutil
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
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
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
.course-nav { position: fixed; top: 0; left: 0; bottom: 0; width: 15rem; overflow-y: auto;
  padding: 1rem; background: #f6f7f9; border-right: 1px solid #ddd; font: 14px/1.4 sans-serif; }
.course-nav a { text-decoration: none; color: #1a4e8a; }
.course-nav .home { display: block; font-weight: bold; margin-bottom: 0.8rem; }
.course-nav ol { list-style: none; padding: 0; margin: 0; }
.course-nav li { margin: 0.15rem 0 0.45rem; }
.course-nav .sub { font-size: 12px; margin-left: 1.6rem; color: #666; }
.course-nav .current { font-weight: bold; color: #000; }
body.course-page main, body.course-home main { margin-left: 17rem; max-width: 60rem;
  padding: 1rem 2rem; }
.course-pager { display: flex; justify-content: space-between; margin: 2rem 0 3rem;
  padding-top: 1rem; border-top: 1px solid #ddd; font: 15px sans-serif; }
.course-open { font: 13px sans-serif; margin: 0 0 1rem; }
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


def rel(from_page, to_page):
    """A relative link from one site path to another (both like ``notebooks/03_x.html``)."""
    depth = from_page.count("/")
    return "../" * depth + to_page


def rewrite_links(text, page, built, out=OUT):
    """Point ``.ipynb`` links at the built pages and other repository files at the repository.

    ``page`` is the site path of the page holding the links; ``built`` the set of
    repository paths (``notebooks/03_x.ipynb``...) that became pages. Links to the
    site's own files (``course.css``...) in ``out`` stay as they are.
    """
    repo = repository_url()
    folder = Path(page).parent
    site = {p[: -len(".ipynb")] + ".html" for p in built} | {"index.html"}

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
            new = f"{repo}/blob/{BRANCH}/{resolved}"
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
    """The sidebar: every lesson, each with its exercises and solutions."""
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
                sub.append(f'<a{c} href="{rel(page, other["page"])}">{KIND_LABEL[kind]}</a>')
        subline = f'<div class="sub">{" · ".join(sub)}</div>' if sub else ""
        items.append(
            f'<li><a{cls} href="{rel(page, lesson["page"])}">{html.escape(lesson["title"])}</a>'
            f"{subline}</li>"
        )
    return (
        f'<nav class="course-nav"><a class="home" href="{rel(page, "index.html")}">'
        f"Attention by hand</a><ol>{''.join(items)}</ol></nav>"
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
    for entry in entries:
        nb = entry["nb"]
        nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]  # Colab's own install cell
        nb.metadata.pop("widgets", None)  # saved widget state would pull a renderer from a CDN
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                output.get("data", {}).pop(WIDGET_VIEW, None)  # show the text fallback
        page = entry["page"]
        root = rel(page, "")
        resources = {
            "metadata": {
                "name": entry["title"],
                "path": str((ROOT / entry["source"]).parent),
            },
            "course": {
                "root": root,
                "mathjax": MATHJAX_CONFIG.replace("{root}", root),
                "nav": nav_html(page, entries, entry),
                "pager": open_line(entry) + pager_html(page, entries, entry),
            },
        }
        body, _ = exporter.from_notebook_node(nb, resources=resources)
        target = out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rewrite_links(body, page, built, out), encoding="utf-8")


def readme_sections(text, wanted):
    """The README's title and introduction, then its ``## `` sections named in ``wanted``."""
    parts = re.split(r"(?m)^(?=## )", text)
    keep = [parts[0]]
    for part in parts[1:]:
        heading = part.splitlines()[0][3:].strip()
        if heading in wanted:
            keep.append(part)
    return "".join(keep)


def landing(entries, out):
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    text = readme_sections(readme, {"Course map", "Other ways to take the course"})
    body = markdown2html_mistune(text)  # the map already has its Colab column
    body = rewrite_links(body, "index.html", {e["source"] for e in entries}, out)
    start = binder_url()
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Attention by hand: a course</title>
<link rel="stylesheet" href="course.css">
{MATHJAX_CONFIG.replace("{root}", "")}
</head>
<body class="course-home">
{nav_html("index.html", entries, None)}
<main>
<p class="course-open">Start with <a href="notebooks/00_start_here.html">00 start here</a>
· <a href="{start}">launch the course on Binder</a></p>
{body}
</main></body></html>
"""
    (out / "index.html").write_text(page, encoding="utf-8")


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
                "title": title_of(nb, stem),
                "nb": nb,
            }
        )
    copy_mathjax(out)
    (out / "course.css").write_text(CSS, encoding="utf-8")
    convert(entries, out)
    landing(entries, out)
    return len(entries) + 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (emptied first)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    n = build(args.out)
    print(f"site: {n} pages in {args.out} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
