"""The lessons in a real browser: JupyterLab served like `make lab`, driven by Chromium.

For each lesson that uses attnlib.widgets: open it, clear and run all cells, and
fail on any error output, any "Error displaying widget" or any console error
from the page. Check that each live view's sliders, number boxes and figure have
accessible names (the figure's is its alt text) and that axe-core's audit of the
views finds no serious or critical violation. Then move a slider in each live
view and check that its numbers and its figure changed on screen, and time 20 moves
(keystroke to updated numbers and to the new figure loaded in the page). Screenshots go to artefacts/browser/.

Run with `make test-browser` (plain `make test` skips this folder).
"""

import os
import statistics
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import LATENCY, ROOT
from .widget_names import assert_named

NOTEBOOKS = ROOT / "notebooks"
# extra notebooks to open, e.g. a scratch file while lessons are written (paths from the root)
EXTRA = [p for p in os.environ.get("ATTNLIB_BROWSER_NOTEBOOKS", "").split(":") if p]
WIDGET_LESSONS = (
    sorted(
        str(p.relative_to(ROOT))
        for p in NOTEBOOKS.glob("*.ipynb")
        if "attnlib.widgets" in p.read_text(encoding="utf-8")
    )
    + EXTRA
)

# two values each slider alternates between (typed into its readout)
MOVES = {
    "attnlib-playground": ("1.5", "0.3"),
    "attnlib-geometry": ("2.5", "-1.5"),
    "attnlib-scaling_explorer": ("256", "4"),
}
N_MOVES = 20
TIMEOUT = 60_000  # ms: a cold kernel on a busy machine

ARM = """(view) => {
  const img = view.querySelector('img.attnlib-figure');
  const numbers = view.querySelector('.attnlib-numbers');
  const t = {start: null, numbers: null, figure: null};
  window.__attnlib_t = t;
  if (!window.__attnlib_keys) {  // capture phase: runs before the widget handles Enter
    window.__attnlib_keys = true;
    document.addEventListener('keydown', (e) => {
      const now = window.__attnlib_t;
      if (e.key === 'Enter' && now && now.start === null) now.start = performance.now();
    }, true);
  }
  const seen = new MutationObserver(() => {
    if (t.numbers === null) t.numbers = performance.now();
    seen.disconnect();
  });
  seen.observe(numbers, {subtree: true, childList: true, characterData: true});
  img.addEventListener('load', () => { t.figure = performance.now(); }, {once: true});
}"""
DONE = """() => { const t = window.__attnlib_t;
  return t.start !== null && t.numbers !== null && t.figure !== null; }"""
ELAPSED = """() => { const t = window.__attnlib_t;
  return [t.numbers - t.start, t.figure - t.start]; }"""


class PageErrors:
    """Collects console errors and uncaught exceptions from a page."""

    def __init__(self, page):
        self.messages = []
        page.on("console", self._console)
        page.on("pageerror", lambda err: self.messages.append(f"page error: {err}"))

    def _console(self, msg):
        if msg.type == "error":
            self.messages.append(f"console error: {msg.text}")


def open_notebook(browser, lab, path=None):
    """Open a notebook, or with no path the server's front page (as `make lab` does).

    A notebook opens in a reset workspace, so notebooks opened before stay closed.
    """
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(TIMEOUT)
    errors = PageErrors(page)
    page.goto(f"{lab}/lab/tree/{path}?reset" if path else f"{lab}/")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    try:  # shown when the kernel list arrives late; its default choice is the notebook's own
        dialog.wait_for(timeout=2_000)
        dialog.locator(".jp-mod-accept").click()
    except PlaywrightTimeout:
        pass
    # the kernel is up once the toolbar's indicator says idle
    page.wait_for_selector(
        ".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']"
    )
    return page, errors


def menu(page, top, item):
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def run_all(page):
    """Clear every output (so stale prompts cannot pass), run all cells, wait for the last."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                 .every(p => !/\\d/.test(p.textContent))"""
    )
    menu(page, "Run", "Run All Cells")
    # done when every cell has its count, or when an error stopped the run (reported later)
    page.wait_for_function(
        """() => { const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                   const text = prompts.map(p => p.textContent.trim());
                   const done = text.length > 0 && text.every(t => /^\\[\\d+\\]:$/.test(t));
                   const stopped = !text.some(t => t.includes('*')) && document.querySelector(
                       ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']");
                   return done || stopped; }"""
    )
    page.wait_for_selector(
        ".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']"
    )


def assert_clean(page, errors, name):
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = stderr.all_inner_texts()
    assert not texts, f"{name}: error or stderr output in the page:\n" + "\n".join(texts)
    broken = page.get_by_text("Error displaying widget")
    assert broken.count() == 0, f"{name}: a widget failed to render"
    assert not errors.messages, f"{name}: " + "\n".join(errors.messages)


def set_slider(slider, value):
    """Type a value into a slider's readout and press Enter (as a learner can)."""
    readout = slider.locator(".widget-readout")
    readout.click()
    readout.press("Control+A")
    readout.type(value)
    readout.press("Enter")


# axe-core (pinned by tools/site/package-lock.json; `make test-browser` installs it with npm ci)
AXE = os.environ.get("ATTNLIB_AXE", str(ROOT / "build/axe/node_modules/axe-core/axe.min.js"))
# axe-core's audit of the live views only (JupyterLab's own page is not the course's to fix)
AXE_VIEWS = """async () => {
  const result = await axe.run({include: [['.attnlib-view']]}, {resultTypes: ['violations']});
  return result.violations.filter(v => ['serious', 'critical'].includes(v.impact)).map(v =>
    `${v.impact}: ${v.id} (${v.help}): ${v.nodes.slice(0, 3).map(n => n.html.slice(0, 160))}`);
}"""


def axe_serious(page):
    """axe-core's serious and critical violations inside the page's widget views."""
    if not Path(AXE).is_file():
        pytest.fail(f"no axe-core at {AXE}: `make test-browser` installs it (npm ci)")
    page.add_script_tag(path=AXE)
    return page.evaluate(AXE_VIEWS)


def move_and_time(page, view, slider, value):
    """Set the slider; return ms from the Enter key to new numbers and to the new figure."""
    page.evaluate(ARM, view.element_handle())
    set_slider(slider, value)
    try:
        page.wait_for_function(DONE, timeout=15_000)
    except PlaywrightTimeout:
        seen = page.evaluate("() => window.__attnlib_t")
        raise AssertionError(
            f"the view did not update within 15 s of setting its slider to {value} "
            f"(page timestamps: {seen}; null = that part never changed)"
        ) from None
    return page.evaluate(ELAPSED)


def test_start_here_opens_like_make_lab(browser, lab, artefacts):
    """`make lab` serves the repo root and opens notebooks/00_start_here.ipynb.

    It runs first, on the fresh server, so the page is exactly what `make lab` opens.
    """
    path = "notebooks/00_start_here.ipynb"
    assert (ROOT / path).exists()
    page, errors = open_notebook(browser, lab)  # the bare server address, like `make lab`
    try:
        assert page.url.split("?")[0].endswith(f"/lab/tree/{path}"), page.url
        current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
        assert current.inner_text().strip() == "00_start_here.ipynb"
        run_all(page)
        assert page.locator(".jp-NotebookPanel .jp-MarkdownCell h1").count() >= 1
        assert_clean(page, errors, "00_start_here")
        page.screenshot(path=artefacts / "00_start_here.png", full_page=True)
    except Exception:
        page.screenshot(path=artefacts / "00_start_here-failed.png", full_page=True)
        raise
    finally:
        page.close()


@pytest.mark.parametrize("path", WIDGET_LESSONS)
def test_widgets_update_in_the_browser(browser, lab, artefacts, path):
    name = Path(path).stem
    page, errors = open_notebook(browser, lab, path)
    try:
        run_all(page)
        views = page.locator(".attnlib-view")
        views.first.wait_for()
        assert_clean(page, errors, name)
        page.screenshot(path=artefacts / f"{name}.png", full_page=True)
        assert axe_serious(page) == [], f"{name}: axe-core on the widget views"
        for i in range(views.count()):
            view = views.nth(i)
            kind = next(c for c in view.get_attribute("class").split() if c in MOVES)
            view.scroll_into_view_if_needed()
            view.screenshot(path=artefacts / f"{name}-{kind}.png")
            assert_named(view, kind)
            slider = view.locator(".widget-slider").first
            numbers = view.locator(".attnlib-numbers")
            figure = view.locator("img.attnlib-figure")
            numbers_before, figure_before = numbers.inner_text(), figure.screenshot()

            times = [move_and_time(page, view, slider, MOVES[kind][k % 2]) for k in range(N_MOVES)]

            assert slider.locator(".widget-readout").inner_text().strip() != "", kind
            assert numbers.inner_text() != numbers_before, (
                f"{name}: {kind}'s numbers did not change"
            )
            assert figure.screenshot() != figure_before, f"{name}: {kind}'s figure did not change"
            view.screenshot(path=artefacts / f"{name}-{kind}-moved.png")
            assert_named(view, kind)  # still named after 20 redraws
            to_numbers = [t[0] for t in times]
            to_figure = [t[1] for t in times]
            LATENCY.append(
                f"{name} {kind}: {N_MOVES} moves; to numbers median "
                f"{statistics.median(to_numbers):.0f} ms, worst {max(to_numbers):.0f} ms; "
                f"to figure median {statistics.median(to_figure):.0f} ms, "
                f"worst {max(to_figure):.0f} ms"
            )
        assert_clean(page, errors, name)
    except Exception:
        page.screenshot(path=artefacts / f"{name}-failed.png", full_page=True)
        raise
    finally:
        page.close()
