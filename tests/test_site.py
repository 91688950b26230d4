"""The course website, built from the stored outputs and checked page by page in Chromium.

The site is built into a temporary folder (`tools/build_site.py`), served on
127.0.0.1, and every page is opened in Debian's Chromium (Playwright, no browser
download), over HTTP and from `file://` (the README's own route: open
build/site/index.html). A page fails on any request that leaves localhost, any failed or
4xx/5xx request, a MathJax error or math left untypeset, an image that does not
load, a console error, a link to a file or anchor that is not there (every `href`
is followed: into the site, to an anchor of another page, and into the repository,
where it must name a file or folder git tracks), or a serious or critical finding of
axe-core's accessibility audit (axe-core from npm, pinned by tools/site/package-lock.json
and installed with `npm ci` into build/axe; `make test-site` passes its path in
ATTNLIB_AXE and it is injected into each page, nothing fetched).

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
import html.parser
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
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
AXE = os.environ.get("ATTNLIB_AXE", str(ROOT / "build/axe/node_modules/axe-core/axe.min.js"))
LESSONS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = ["index.html", "contributing.html"] + [
    f"{kind}/{p.stem}.html"
    for kind in ("notebooks", "exercises", "solutions")
    for p in sorted((ROOT / kind).glob("[0-9]*.ipynb"))
]


@functools.cache
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


@functools.cache
def tracked():
    """Every path git tracks in the course, with every folder that holds one."""
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {
        str(Path(f).parents[i].as_posix()) for f in files for i in range(len(Path(f).parts) - 1)
    }
    return set(files), folders


def repository_link_problem(url):
    """Why a link into the course's repository is dead (None when it names a tracked path).

    ``.../blob/main/PATH`` must name a file git tracks, ``.../tree/main/PATH`` a folder."""
    repo = load_builder().repository_url()
    if not url.startswith(repo + "/"):
        return None
    rest = urllib.parse.unquote(urllib.parse.urlsplit(url).path)[
        len(urllib.parse.urlsplit(repo).path) :
    ]
    match = re.fullmatch(r"/(blob|tree)/([^/]+)/(.+?)/?", rest)
    if not match:
        return None  # the repository's own pages (issues...): not a file of it
    kind, branch, path = match.groups()
    files, folders = tracked()
    if branch != load_builder().BRANCH:
        return f"links to branch {branch}, not {load_builder().BRANCH}"
    if kind == "blob" and path not in files:
        return f"{path} is not a file git tracks" + (" (a folder: tree)" if path in folders else "")
    if kind == "tree" and path not in folders:
        return f"{path} is not a folder git tracks"
    return None


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name in ("id", "name") and value)


@functools.cache
def ids_of(path):
    """The ids (and <a name>s) of a built page, read from its file."""
    parser = _Ids()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    return frozenset(parser.ids)


def file_of(url, folder):
    """The file of the site a same-site URL (http://127.0.0.1:.../x or file:///.../x) opens."""
    path = urllib.parse.unquote(url.path)
    if url.scheme == "file":
        return Path(path)
    return Path(folder) / path.lstrip("/")


# axe-core's audit of the page as it stands (math typeset): every violation, with its impact
AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 120))}));
}"""
SERIOUS = ("serious", "critical")


def check_page(browser, base, folder, page_path, audit=True):
    """Open one page; return a list of everything wrong with it (empty when all is well).

    ``base`` is the site's address: ``http://127.0.0.1:PORT`` or ``file:///...``."""
    problems = []
    page = browser.new_page()
    page.set_default_timeout(60_000)

    def route(route):
        url = urllib.parse.urlsplit(route.request.url)
        if url.scheme not in ("data", "file") and url.hostname not in ("127.0.0.1", "localhost"):
            problems.append(f"request leaves localhost: {route.request.url}")
            route.abort()
        else:
            route.continue_()

    page.route("**/*", route)
    # every failed request is a fault, MathJax's own font probes included
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on(
        "response",
        lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"),
    )
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
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
            absolute = urllib.parse.urljoin(page.url, href)
            url = urllib.parse.urlsplit(absolute)
            if (url.scheme, url.netloc) != (here.scheme, here.netloc):
                # Colab, Binder: links, never requested; the repository: a tracked path
                why = repository_link_problem(absolute)
                if why:
                    problems.append(f"dead link into the repository: {href} ({why})")
                continue
            target = file_of(url, folder)
            if not target.is_file():
                problems.append(f"dead link: {href}")
                continue
            if not url.fragment:
                continue
            ids = [url.fragment, urllib.parse.unquote(url.fragment)]  # as a browser tries
            if url.path == here.path:
                found = page.evaluate("(ids) => ids.some(id => document.getElementById(id))", ids)
            else:
                found = any(i in ids_of(target) for i in ids)
            if not found:
                problems.append(f"dead anchor: {href}")
        if audit:
            page.add_script_tag(path=AXE)
            for v in page.evaluate(AXE_RUN):
                if v["impact"] in SERIOUS:
                    problems.append(f"axe {v['impact']}: {v['id']} ({v['help']}): {v['nodes']}")
        return problems, math
    finally:
        page.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_page_works_offline(site, browser, page_path):
    """Over HTTP: every check above, with axe-core's audit."""
    folder, base = site
    problems, math = check_page(browser, base, folder, page_path)
    assert not problems, f"{page_path}:\n" + "\n".join(problems)
    assert math["loaded"]


@pytest.mark.parametrize("page_path", PAGES)
def test_page_works_from_file(site, browser, page_path):
    """From file://, as the README says to open the site: no console error, no failed
    request (MathJax's font test fails there when it asks for about:blank), links alive."""
    folder, _ = site
    problems, math = check_page(browser, folder.as_uri(), folder, page_path, audit=False)
    assert not problems, f"{page_path} from file://:\n" + "\n".join(problems)
    assert math["loaded"] and math["done"]


def test_axe_core_is_the_pinned_one():
    """The audit runs the axe-core that tools/site/package-lock.json pins."""
    if not IN_BROWSER:
        pytest.skip("the site check runs with `make test-site`")
    import json

    lock = json.loads((ROOT / "tools/site/package-lock.json").read_text(encoding="utf-8"))
    pinned = lock["packages"]["node_modules/axe-core"]["version"]
    assert Path(AXE).is_file(), f"no axe-core at {AXE}: `make test-site` installs it"
    header = Path(AXE).read_text(encoding="utf-8")[:200]
    assert f"axe v{pinned}" in header, header


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
    repo = load_builder().repository_url()
    (bad / "other.html").write_text('<p id="here">other</p>', encoding="utf-8")
    (bad / "page.html").write_text(
        "<!DOCTYPE html><html><head>" + mathjax.group(0) + "</head><body>"
        '<script src="https://cdn.example.org/x.js"></script>'
        '<img src="missing.png">'
        '<a href="nowhere.html">dead</a> <a href="#no-such-anchor">dead anchor</a>'
        '<a href="other.html#gone">dead anchor elsewhere</a> <a href="other.html#here">ok</a>'
        f'<a href="{repo}/blob/main/contributing.html">built page as a repository file</a>'
        f'<a href="{repo}/blob/main/my-work/05_softmax.ipynb">ignored file</a>'
        f'<a href="{repo}/blob/main/tests">folder as a blob</a>'
        f'<a href="{repo}/blob/main/tools/build_site.py">tracked file</a>'
        f'<a href="{repo}/tree/main/tools">tracked folder</a>'
        '<main><a href="page.html" style="text-decoration: none; color: inherit">plain</a>'
        '<a href="page.html" style="color: blue"><code style="display: inline-block">'
        "boxed</code></a></main>"
        '<button></button><span style="color: #b4b4b4">faint text</span>'
        # a font at about:blank, as MathJax's own font test asks for: from file:// it fails
        "<style>@font-face {font-family: Blank; src: url('about:blank')}</style>"
        '<p style="font-family: Blank">text in the blank font</p>'
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
    assert "dead anchor: other.html#gone" in text and "other.html#here" not in text
    assert f"{repo}/blob/main/contributing.html (contributing.html is not a file git" in text
    assert f"{repo}/blob/main/my-work/05_softmax.ipynb (my-work/05_softmax.ipynb is not" in text
    assert "tests is not a file git tracks (a folder: tree)" in text
    assert "tools/build_site.py" not in text and "tree/main/tools" not in text, text
    assert "link does not look like a link: plain" in text
    assert "link does not look like a link: boxed" in text
    assert "MathJax error" in text or "math errors marked" in text
    assert "axe critical: button-name" in text and "axe serious: color-contrast" in text
    # the same page from file://: the font at about:blank fails, with a console error
    problems, _ = check_page(browser, bad.as_uri(), bad, "page.html", audit=False)
    text = "\n".join(problems)
    assert "request failed: about:blank" in text and "console: " in text, text
    assert "axe" not in text


PAGE_TITLE = """() => ({title: document.title, h1: document.querySelector('h1')?.innerText,
  notice: document.querySelector('main .course-notice')?.innerText || ''})"""


def test_titles_are_plain_text_and_solutions_say_so(site, browser):
    """Every <title> is plain text (no TeX, no markdown); a solution page is titled and headed
    as solutions and starts with a notice, an exercise page is not."""
    folder, base = site
    builder = load_builder()
    page = browser.new_page()
    try:
        for page_path in PAGES:
            text = (folder / page_path).read_text(encoding="utf-8")
            title = html.unescape(re.search(r"<title>(.*?)</title>", text, re.S).group(1))
            assert not re.search(r"[$\\`*]", title), f"{page_path}: <title> {title!r}"
            assert title.strip(), page_path
            if page_path.startswith("solutions/"):
                assert "Solutions" in title, f"{page_path}: {title!r}"
                assert 'class="course-notice"' in text, page_path
            else:
                assert "Solutions" not in title and 'class="course-notice"' not in text, page_path
        page.goto(f"{base}/solutions/08_why_sqrt_dk.html")
        page.wait_for_function("() => window.courseMath && window.courseMath.done")
        seen = page.evaluate(PAGE_TITLE)
        lesson = builder.title_of(
            nbformat.read(ROOT / "solutions/08_why_sqrt_dk.ipynb", as_version=4), "08"
        )
        assert seen["title"] == builder.plain_title(builder.solution_title(lesson)), seen
        assert seen["title"].startswith("08 · Solutions") and "√d_k" in seen["title"], seen
        assert seen["h1"].startswith("08 · Solutions"), seen
        assert "answers" in seen["notice"] and "exercises for lesson 08" in seen["notice"], seen
        # the notice comes before the page's own heading
        order = page.evaluate(
            "() => document.querySelector('main .course-notice').compareDocumentPosition("
            "document.querySelector('main h1')) & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        assert order, "the solutions notice is not above the heading"
    finally:
        page.close()


LINK_NAMES = """() => [...document.querySelectorAll('a[href]')].map(a => a.textContent.trim())"""


def test_skip_link_comes_first_and_links_name_their_lesson(site, browser):
    """The first Tab reaches "Skip to the lesson", which moves past the sidebar; no link is
    named only "exercises" or "solutions" (a screen reader's list of links says which)."""
    folder, base = site
    page = browser.new_page()
    try:
        for page_path in ("index.html", "notebooks/03_scoring.html", "solutions/03_scoring.html"):
            page.goto(f"{base}/{page_path}")
            page.keyboard.press("Tab")
            focused = page.evaluate(
                "() => ({text: document.activeElement.textContent.trim(),"
                " href: document.activeElement.getAttribute('href'),"
                " visible: document.activeElement.getBoundingClientRect().left >= 0})"
            )
            assert focused["text"].startswith("Skip to the"), (page_path, focused)
            assert focused["visible"], f"{page_path}: the focused skip link is off screen"
            page.keyboard.press("Enter")
            assert page.evaluate("() => location.hash") == focused["href"]
            target = page.evaluate(
                "(id) => { const e = document.getElementById(id);"
                " return e && e.tagName === 'MAIN' && !e.closest('nav'); }",
                focused["href"].lstrip("#"),
            )
            assert target, f"{page_path}: {focused['href']} is not the page's <main>"
            names = page.evaluate(LINK_NAMES)
            bare = [n for n in names if n.lower() in ("exercises", "solutions")]
            assert not bare, f"{page_path}: {len(bare)} links named only {sorted(set(bare))}"
            assert "exercises for lesson 03" in names and "solutions for lesson 03" in names
    finally:
        page.close()


# ---- checks without a browser (they run in `make test` as well) ----


def test_links_to_ignored_files_are_left_as_text(tmp_path):
    """A link to the learner's own copy (my-work/, which git ignores) is text on the site,
    never a link into the repository; a link to a tracked file stays a repository link."""
    builder = load_builder()
    text = (
        '<p><a href="../my-work/05_softmax.ipynb"><code>my-work/05_softmax.ipynb</code></a>'
        ' and <a href="../tools/build_site.py">the builder</a>'
        ' and <a href="../notebooks/05_softmax.ipynb">lesson 05</a></p>'
    )
    out = builder.rewrite_links(
        text, "exercises/05_softmax.html", {"notebooks/05_softmax.ipynb"}, tmp_path
    )
    repo = builder.repository_url()
    assert (
        "<code>my-work/05_softmax.ipynb</code> and" in out
        and 'my-work/05_softmax.ipynb"' not in out
    )
    assert f'href="{repo}/blob/main/tools/build_site.py"' in out
    assert 'href="../notebooks/05_softmax.html"' in out
    nav = builder.rewrite_links(
        builder.nav_html("notebooks/03_x.html", [], None), "notebooks/03_x.html", set(), tmp_path
    )
    assert 'href="../contributing.html"' in nav, nav


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
