"""The course website, built from the stored outputs and checked page by page in Chromium.

The site is built into a temporary folder (`tools/build_site.py`), served on
127.0.0.1, and every page is opened in Debian's Chromium (Playwright, no browser
download). A page fails on any request that leaves localhost, any failed or
4xx/5xx request, a MathJax error or math left untypeset, an image that does not
load, a console error, or an internal link to a file or anchor that is not there.

The checks that need no browser run in plain `make test` too: every README table
renders as an HTML table, the course map has exactly one row per lesson in
notebooks/, the README states the true number of lessons, a figure's alt text
reaches its `<img>`, and a widget's note says what it does and where it runs.

Run with `make test-site` (CI runs it with the network cut, `unshare -n`); plain
`make test` skips the browser checks, as they need Chromium and Playwright (`.[browser]`).
"""

import base64
import functools
import html
import http.server
import importlib.util
import os
import re
import shutil
import threading
import urllib.parse
from pathlib import Path

import nbformat
import pytest

IN_BROWSER = os.environ.get("ATTNLIB_SITE") == "1"
browser_only = pytest.mark.skipif(
    not IN_BROWSER, reason="the browser checks run with `make test-site`"
)
# The switch for figure alt text: True makes every page fail on an <img> without a real alt.
# Only the fixture notebook is held to it until the lessons store alt text with their figures.
ALT_TEXT_ON_EVERY_PAGE = True

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("ATTNLIB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = ["index.html", "contributing.html"] + [
    f"{kind}/{p.stem}.html"
    for kind in ("notebooks", "exercises", "solutions")
    for p in sorted((ROOT / kind).glob("[0-9]*.ipynb"))
]


def load_builder():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder):
    """Serve ``folder`` on a free localhost port in a thread; return (server, base URL)."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not IN_BROWSER:
        pytest.skip("the site check runs with `make test-site`")
    out = tmp_path_factory.mktemp("site") / "site"
    n = load_builder().build(out)
    assert n == len(PAGES)
    server, base = serve(out)
    yield out, base
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not IN_BROWSER:
        pytest.skip("the site check runs with `make test-site`")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


LINKS = """() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"""
IMAGES = """() => [...document.querySelectorAll('img')]
  .filter(img => !(img.complete && img.naturalWidth > 0))
  .map(img => (img.getAttribute('src') || '').slice(0, 80))"""
MATH = """() => ({
  loaded: !!window.MathJax && !!window.courseMath,
  done: !!(window.courseMath && window.courseMath.done),
  errors: window.courseMath ? window.courseMath.errors : [],
  marked: document.querySelectorAll('.merror, .noError, .MathJax_Error').length,
  scripts: document.querySelectorAll('script[type^="math/tex"]').length,
  rendered: document.querySelectorAll('.MathJax, .MathJax_Display').length,
  // TeX left as text where math should be: markdown cells and LaTeX outputs (a text/plain
  // output or a code cell may show TeX source on purpose)
  raw: [...document.querySelectorAll('.jp-RenderedMarkdown, .jp-RenderedLatex, .course-home main')]
    .map(e => (e.innerText.match(/\\$\\$|\\\\frac|\\\\sqrt|\\\\top/g) || []).length)
    .reduce((a, b) => a + b, 0)
})"""


# every link in the text (not the sidebar, not a heading's anchor) must look like a link:
# underlined, in a colour other than the text's
PLAIN_LINKS = """() => {
  const body = getComputedStyle(document.body).color;
  return [...document.querySelectorAll('main a[href]')]
    .filter(a => !a.classList.contains('anchor-link') && a.innerText.trim())
    .filter(a => [a, ...a.querySelectorAll('*')]
      .filter(e => !e.closest('.MathJax, .MathJax_Display, .MathJax_Preview, script'))
      .some(e => {
      // the link and whatever it holds (a file name in <code>, bold text): the link's colour,
      // and an underline of its own or, for inline text, the link's
      const s = getComputedStyle(e);
      const underlined = s.textDecorationLine.includes('underline') || (e !== a && s.display === 'inline');
      return !underlined || s.color === body; }))
    .map(a => a.innerText.trim().slice(0, 40));
}"""


def console_error(message):
    """A console error, other than the two lines MathJax's about:blank font probe causes
    (a failed request to anywhere else is reported by its own event, with its address)."""
    if message.type != "error":
        return False
    text = message.text
    return not ("'about:blank'" in text or text == "Failed to load resource: net::ERR_FAILED")


def check_page(browser, base, folder, page_path):
    """Open one page; return a list of everything wrong with it (empty when all is well)."""
    problems = []
    page = browser.new_page()
    page.set_default_timeout(60_000)

    def route(route):
        host = urllib.parse.urlsplit(route.request.url).hostname
        if host not in ("127.0.0.1", "localhost") and not route.request.url.startswith("data:"):
            problems.append(f"request leaves localhost: {route.request.url}")
            route.abort()
        else:
            route.continue_()

    page.route("**/*", route)
    # MathJax 2 probes web-font support with a font at about:blank: no request, not a fault
    page.on(
        "requestfailed",
        lambda r: r.url != "about:blank" and problems.append(f"request failed: {r.url}"),
    )
    page.on(
        "response",
        lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"),
    )
    page.on("console", lambda m: console_error(m) and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    try:
        page.goto(f"{base}/{page_path}", wait_until="load")
        math = page.evaluate(MATH)
        if not math["loaded"]:
            problems.append("MathJax did not load")
        else:
            page.wait_for_function("() => window.courseMath.done")
            math = page.evaluate(MATH)
            problems += [f"MathJax error: {e}" for e in math["errors"]]
            if math["marked"]:
                problems.append(f"{math['marked']} math errors marked in the page")
            if math["scripts"] != math["rendered"] and math["rendered"] < math["scripts"]:
                problems.append(f"math left untypeset: {math['scripts']} {math['rendered']}")
            if math["raw"]:
                problems.append(f"{math['raw']} pieces of raw TeX visible in the page")
        problems += [f"image does not load: {src}" for src in page.evaluate(IMAGES)]
        problems += [f"link does not look like a link: {t}" for t in page.evaluate(PLAIN_LINKS)]
        if ALT_TEXT_ON_EVERY_PAGE:
            builder = load_builder()
            problems += builder.images_without_alt(page.content())
        here = urllib.parse.urlsplit(page.url)
        for href in page.evaluate(LINKS):
            url = urllib.parse.urlsplit(urllib.parse.urljoin(page.url, href))
            if url.netloc != here.netloc:
                continue  # Colab, Binder, the repository: links, never requested
            target = folder / urllib.parse.unquote(url.path).lstrip("/")
            if not target.is_file():
                problems.append(f"dead link: {href}")
            elif url.fragment and url.path == here.path:
                ids = [url.fragment, urllib.parse.unquote(url.fragment)]  # as a browser tries
                found = page.evaluate("(ids) => ids.some(id => document.getElementById(id))", ids)
                if not found:
                    problems.append(f"dead anchor: {href}")
        return problems, math
    finally:
        page.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_page_works_offline(site, browser, page_path):
    folder, base = site
    problems, math = check_page(browser, base, folder, page_path)
    assert not problems, f"{page_path}:\n" + "\n".join(problems)
    assert math["loaded"]


def test_pages_load_nothing_from_outside_and_math_is_typeset(site, browser):
    folder, base = site
    text = (folder / "notebooks" / "04_scaling.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=[\"']https?:", text), "a CDN script is referenced"
    assert "require.js" not in text and "embed-amd" not in text
    _, math = check_page(browser, base, folder, "notebooks/04_scaling.html")
    assert math["rendered"] >= 10, math  # lesson 04 is full of formulas


def test_widgets_show_a_note_and_links_are_html(site):
    folder, _ = site
    text = (folder / "notebooks" / "03_scoring.html").read_text(encoding="utf-8")
    assert "Live widget <code>geometry()</code>" in text
    assert "labextension" not in text
    assert "application/vnd.jupyter.widget-view+json" not in text
    assert 'href="04_scaling.html"' in text or 'href="../notebooks/04_scaling.html"' in text
    relative_ipynb = re.findall(r'href="(?![a-z]+:)[^"]*\.ipynb[^"]*"', text)
    assert not relative_ipynb, f"links left pointing at notebooks: {relative_ipynb}"


def test_landing_page_has_the_course_map_with_colab_links(site):
    folder, _ = site
    text = (folder / "index.html").read_text(encoding="utf-8")
    builder = load_builder()
    for p in LESSONS:
        assert f'href="notebooks/{p.stem}.html"' in text, p.stem
        assert builder.colab_url(f"notebooks/{p.stem}.ipynb") in text, p.stem


def test_landing_page_is_for_learners(site):
    """The course map is a table with one row per lesson; how to start is there; the
    maintainer notes are on contributing.html, not on the front page."""
    folder, _ = site
    text = (folder / "index.html").read_text(encoding="utf-8")
    tables = re.findall(r"<table>.*?</table>", text, re.S)
    course_map = [t for t in tables if "open in Colab" in t]
    assert len(course_map) == 1, f"{len(course_map)} course-map tables on the landing page"
    rows = re.findall(r"<tr>.*?</tr>", course_map[0], re.S)
    assert len(rows) == len(LESSONS) + 1, (len(rows), len(LESSONS))  # header + one per lesson
    linked = [re.findall(r'href="notebooks/([^"/]+)\.html"', row)[:1] for row in rows[1:]]
    assert sorted(sum(linked, [])) == [p.stem for p in LESSONS], linked
    assert "|---|" not in text and "| [" not in text, "a table left as raw text"
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())  # what a reader sees
    for how in ("make lab", "make test", "Colab", "Binder", "conda", "Notebook 7", "VS Code"):
        assert how in words, how
    for maintainer in ("Jupyter Book", "make test-site", "tools/generate.py", "A fork"):
        assert maintainer not in words, maintainer
        assert maintainer in (folder / "contributing.html").read_text(encoding="utf-8")


def test_the_check_catches_each_kind_of_problem(site, browser, tmp_path):
    """A page with one of each fault: the check must name every one."""
    folder, _ = site
    bad = tmp_path / "bad"
    shutil.copytree(folder / "mathjax", bad / "mathjax")
    head = (folder / "index.html").read_text(encoding="utf-8")
    mathjax = re.search(
        r'<script type="text/x-mathjax-config">.*?MathJax\.js[^<]*</script>', head, re.S
    )
    (bad / "page.html").write_text(
        "<!DOCTYPE html><html><head>" + mathjax.group(0) + "</head><body>"
        '<script src="https://cdn.example.org/x.js"></script>'
        '<img src="missing.png">'
        '<a href="nowhere.html">dead</a> <a href="#no-such-anchor">dead anchor</a>'
        '<main><a href="page.html" style="text-decoration: none; color: inherit">plain</a>'
        '<a href="page.html" style="color: blue"><code style="display: inline-block">'
        "boxed</code></a></main>"
        "<p>$\\frac{1}{$</p></body></html>",
        encoding="utf-8",
    )
    server, base = serve(bad)
    try:
        problems, _ = check_page(browser, base, bad, "page.html")
    finally:
        server.shutdown()
    text = "\n".join(problems)
    assert "request leaves localhost: https://cdn.example.org/x.js" in text
    assert "image does not load: missing.png" in text
    assert "dead link: nowhere.html" in text
    assert "dead anchor: #no-such-anchor" in text
    assert "link does not look like a link: plain" in text
    assert "link does not look like a link: boxed" in text
    assert "MathJax error" in text or "math errors marked" in text


# ---- checks without a browser (they run in `make test` as well) ----


def course_map():
    """The README's course map: the markdown between its two marker comments."""
    match = re.search(r"<!-- course-map -->\n(.*?)<!-- /course-map -->", README, re.S)
    assert match, "README.md has no <!-- course-map --> ... <!-- /course-map --> block"
    return match.group(1)


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_every_table_renders_as_an_html_table(name):
    builder = load_builder()
    text = (ROOT / name).read_text(encoding="utf-8")
    assert builder.markdown_tables(text), f"{name} has no table at all: the check saw nothing"
    assert builder.table_problems(text, name) == []


def test_the_table_check_names_a_row_with_a_cell_too_few():
    builder = load_builder()
    text = "intro\n\n| lesson | exercises | minutes |\n|---|---|---|\n| 00 | | 13 |\n| 08 | 28 |\n"
    assert builder.table_problems(text) == [
        "README.md line 3: table not rendered as a table; line 6 has 2 cells, the header 3"
    ]


def test_course_map_is_one_table_with_a_row_per_lesson():
    builder = load_builder()
    text = course_map()
    tables = builder.markdown_tables(text)
    assert len(tables) == 1, f"the course map holds {len(tables)} tables"
    _, lines = tables[0]
    assert [line for line in text.strip().splitlines() if line.strip()] == lines, (
        "text beside the table"
    )
    header = builder.table_cells(lines[0])
    assert header == [
        "lesson",
        "what it teaches",
        "attnlib it introduces",
        "exercises",
        "open in Colab",
        "minutes (lesson + exercises)",
    ]
    rows = [builder.table_cells(line) for line in lines[2:]]
    for cells in rows:
        assert len(cells) == len(header), (
            f"{cells[0]}: {len(cells)} cells, the header has {len(header)}"
        )
    linked = [re.search(r"\]\((notebooks/[^)]+\.ipynb)\)", cells[0]).group(1) for cells in rows]
    lessons = [f"notebooks/{p.name}" for p in LESSONS]
    assert sorted(linked) == lessons and len(linked) == len(set(linked)), (
        f"the course map's rows {linked} are not the lessons in notebooks/ {lessons}, once each"
    )
    for cells, lesson in zip(rows, linked, strict=True):
        exercise = lesson.replace("notebooks/", "exercises/")
        if (ROOT / exercise).exists():
            assert f"]({exercise})" in cells[3], (
                f"{lesson}: the exercises cell does not link {exercise}"
            )
        else:
            assert cells[3] == "", f"{lesson} has no exercise notebook, but its row names one"
        assert re.fullmatch(r"\d+( \+ \d+)?", cells[5]), (
            f"{lesson}: minutes {cells[5]!r} are not a number or lesson + exercises"
        )
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    html_map = markdown2html_mistune(text)
    assert html_map.count("<table>") == 1
    assert len(re.findall(r"<tr>", html_map)) == len(LESSONS) + 1


def test_readme_states_the_true_number_of_lessons():
    numbers = [p.stem[:2] for p in LESSONS]
    stated = re.findall(r"\b(\d+) lessons, (\d+) to (\d+)\b", README)
    assert stated, "the README's introduction no longer says how many lessons there are"
    assert stated[0] == (str(len(LESSONS)), numbers[0], numbers[-1])
    for count in re.findall(r"\b(\d+) lessons\b", README):
        assert int(count) == len(LESSONS), (
            f"README says {count} lessons; notebooks/ has {len(LESSONS)}"
        )


PNG = base64.b64encode(
    base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAFElEQVR4nGP4z8DwHwyZGBgYGBgAOfoD/V5OWSYAAAAASUVORK5CYII="
    )
).decode()
ALT = 'Bars of birds\' weights: "eat" 0.88 <highest> & seeds 0.05'


def figure_notebook(alt):
    """A notebook with one figure, emitted as the lessons will: alt text in the metadata."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": "python"}
    meta = {"image/png": {"alt": alt, "width": 1, "height": 1}} if alt else {}
    output = nbformat.v4.new_output(
        "display_data", data={"image/png": PNG, "text/plain": "<Figure>"}, metadata=meta
    )
    cell = nbformat.v4.new_code_cell("plot.bars(A[0])", outputs=[output], execution_count=1)
    nb.cells = [nbformat.v4.new_markdown_cell("# Figure fixture"), cell]
    return nb


def convert_fixture(nb, tmp_path):
    builder = load_builder()
    entry = {
        "kind": "notebooks",
        "stem": "99_fixture",
        "source": "notebooks/99_fixture.ipynb",
        "page": "notebooks/99_fixture.html",
        "title": "Figure fixture",
        "nb": nb,
    }
    builder.convert([entry], tmp_path)
    return (tmp_path / "notebooks" / "99_fixture.html").read_text(encoding="utf-8")


def test_a_figures_alt_text_reaches_its_img_escaped(tmp_path):
    builder = load_builder()
    text = convert_fixture(figure_notebook(ALT), tmp_path)
    parser = builder._Images()
    parser.feed(text)
    assert len(parser.found) == 1, parser.found
    img = parser.found[0]
    # parsed back from the page, the attribute is the text itself: quotes, < and & escaped
    assert (img["alt"], img["width"], img["height"]) == (ALT, "1", "1")
    assert "&lt;highest&gt; &amp; seeds" in text and '<img alt="Bars' in text
    assert "No description has been provided" not in text
    assert builder.images_without_alt(text) == []  # the check, on for the fixture


def test_the_alt_check_lists_a_figure_without_alt_text(tmp_path):
    text = convert_fixture(figure_notebook(None), tmp_path)
    missing = load_builder().images_without_alt(text)
    assert len(missing) == 1 and "nbconvert's placeholder" in missing[0], missing


def test_a_widget_shows_what_it_does_and_where_to_run_it(tmp_path):
    builder = load_builder()
    path = ROOT / "notebooks" / "03_scoring.ipynb"
    entry = {
        "kind": "notebooks",
        "stem": path.stem,
        "source": "notebooks/03_scoring.ipynb",
        "page": "notebooks/03_scoring.html",
        "title": "03",
        "nb": nbformat.read(path, as_version=4),
    }
    builder.convert([entry], tmp_path)
    text = (tmp_path / "notebooks" / "03_scoring.html").read_text(encoding="utf-8")
    notes = re.findall(r'<div class="course-widget">.*?</div>', text, re.S)
    assert len(notes) == 1, notes
    note = notes[0]
    assert "geometry()" in note and "move birds" in note  # what it does, from the README's table
    assert builder.colab_url("notebooks/03_scoring.ipynb") in note
    assert "Binder" in note and "make lab" in note
    assert "labextension" not in text and "run this cell in Jupyter" not in text
