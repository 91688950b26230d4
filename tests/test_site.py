"""The course website, built from the stored outputs and checked page by page in Chromium.

The site is built into a temporary folder (`tools/build_site.py`), served on
127.0.0.1, and every page is opened in Debian's Chromium (Playwright, no browser
download). A page fails on any request that leaves localhost, any failed or
4xx/5xx request, a MathJax error or math left untypeset, an image that does not
load, a console error, or an internal link to a file or anchor that is not there.

Run with `make test-site` (CI runs it with the network cut, `unshare -n`); plain
`make test` skips it, as it needs Chromium and Playwright (`.[browser]`).
"""

import functools
import http.server
import importlib.util
import os
import re
import shutil
import threading
import urllib.parse
from pathlib import Path

import pytest

if os.environ.get("ATTNLIB_SITE") != "1":
    pytest.skip("the site check runs with `make test-site`", allow_module_level=True)

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
PAGES = ["index.html"] + [
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
    out = tmp_path_factory.mktemp("site") / "site"
    n = load_builder().build(out)
    assert n == len(PAGES)
    server, base = serve(out)
    yield out, base
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
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


def test_widgets_show_their_text_fallback_and_links_are_html(site):
    folder, _ = site
    text = (folder / "notebooks" / "03_scoring.html").read_text(encoding="utf-8")
    assert "A live widget: run this cell in Jupyter" in text
    assert "application/vnd.jupyter.widget-view+json" not in text
    assert 'href="04_scaling.html"' in text or 'href="../notebooks/04_scaling.html"' in text
    relative_ipynb = re.findall(r'href="(?![a-z]+:)[^"]*\.ipynb[^"]*"', text)
    assert not relative_ipynb, f"links left pointing at notebooks: {relative_ipynb}"


def test_landing_page_has_the_course_map_with_colab_links(site):
    folder, _ = site
    text = (folder / "index.html").read_text(encoding="utf-8")
    builder = load_builder()
    for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        assert f'href="notebooks/{p.stem}.html"' in text, p.stem
        assert builder.colab_url(f"notebooks/{p.stem}.ipynb") in text, p.stem


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
    assert "MathJax error" in text or "math errors marked" in text
