"""Every control of a course widget has an accessible name: shared by the JupyterLab test
(tests/browser) and the JupyterLite test (tests/test_lite.py), which import it only once a
browser is there (playwright is the `browser` extra)."""

from playwright.sync_api import expect

from attnlib import widgets

VIEWS = {  # each view's class, whose alt text its figure must carry
    "attnlib-playground": widgets.Playground,
    "attnlib-geometry": widgets.Geometry,
    "attnlib-scaling_explorer": widgets.ScalingExplorer,
}


def assert_named(view, kind):
    """Every control of a view has an accessible name, and its figure has the view's alt.

    The names are read as the browser exposes them (Playwright's accessible-name
    computation): a slider's handle is named by its tooltip, which starts with the
    label a sighted learner sees; a number box by its tooltip; the figure by its alt.
    """
    handles = view.get_by_role("slider")
    assert handles.count() >= 1, f"{kind}: no slider"
    for i in range(handles.count()):
        label = view.locator(".widget-slider .widget-label").nth(i)
        text, tip = label.inner_text().strip(), label.get_attribute("title")
        assert tip and tip.startswith(f"{text}: "), f"{kind}: label {text!r} has title {tip!r}"
        expect(handles.nth(i)).to_have_accessible_name(tip)
    boxes = view.locator(".widget-text:visible")
    for i in range(boxes.count()):
        tip = boxes.nth(i).locator(".widget-label").get_attribute("title")
        assert tip, f"{kind}: number box {i} has no tooltip"
        expect(boxes.nth(i).locator("input")).to_have_attribute("aria-label", tip)
    expect(view.locator("img.attnlib-figure")).to_have_accessible_name(VIEWS[kind].alt)
    assert view.locator("[title='null']").count() == 0, f"{kind}: a title='null' is left"
