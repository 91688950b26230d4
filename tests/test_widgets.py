"""The widgets without a browser: set their controls from Python, check what they show.

ipywidgets runs without a kernel, and observers fire when a value is set, so each
test moves a control the way the front end would and then reads the numbers, the
HTML panel and the figure bytes.
"""

import html
import json
import os
import re
from pathlib import Path

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

import attnlib
from attnlib import example, widgets
from attnlib.example import compare


def panel_text(view):
    """The numbers panel as plain text, tags dropped."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", view.numbers.value))


def loop_softmax(row):
    e = [np.exp(v - max(row)) for v in row]
    return np.array([v / sum(e) for v in e])


# geometry ---------------------------------------------------------------------------------------


def test_geometry_starts_at_birds_and_matches_the_document():
    view = widgets.geometry()
    assert view.q.tolist() == [1.0, 4.0]
    assert view.scores.tolist() == [3.0, 9.0, 6.0]
    assert compare("softmax_row1_scaled", view.weights).ok
    assert compare("output", np.vstack([view.output, [[1.13, 3.72], [2.87, 2.85]]])).ok
    text = panel_text(view)
    assert "0.013" in text and "0.882" in text and "0.106" in text
    assert "output = (3.74, 2.24)" in text


def test_geometry_sliders_recompute_scores_weights_output_and_figure():
    view = widgets.geometry()
    figure_before, updates_before = view.image.value, view.updates
    view.q_1.value = -2.0
    view.q_2.value = 0.5
    q = [-2.0, 0.5]
    K, V = example.X @ example.W_K, example.X @ example.W_V
    scores = [sum(q[i] * k[i] for i in range(2)) for k in K]  # one dot product per key, by loop
    weights = loop_softmax([s / np.sqrt(2) for s in scores])
    np.testing.assert_allclose(view.scores, scores)
    np.testing.assert_allclose(view.scaled, np.array(scores) / np.sqrt(2))
    np.testing.assert_allclose(view.weights, weights)
    np.testing.assert_allclose(view.output, weights @ V)
    assert view.updates == updates_before + 2  # one update per slider move
    assert view.image.value != figure_before
    text = panel_text(view)
    assert "query q = (-2.0, 0.5)" in text
    assert f"{view.output[0]:.2f}" in text and f"{weights[1]:.3f}" in text


def test_geometry_can_start_from_another_token():
    view = widgets.geometry("seeds")
    assert view.q.tolist() == [2.0, 3.0]
    assert view.scores.tolist() == [6.0, 8.0, 7.0]


# playground -------------------------------------------------------------------------------------


def test_playground_starts_at_the_formula_and_matches_the_document():
    view = widgets.playground()
    assert view.beta.value == pytest.approx(1 / np.sqrt(2))
    assert compare("scores", view.scores).ok
    assert compare("output", view.output).ok
    output, weights = attnlib.attention(view.Q, view.K, view.V)
    np.testing.assert_allclose(view.weights, weights)
    np.testing.assert_allclose(view.output, output)
    text = panel_text(view)
    assert "β = 0.707: the formula's choice, 1/√d_k" in text
    assert "3.74 2.24" in text and "1.13 3.72" in text and "2.87 2.85" in text


def test_playground_beta_is_a_multiplier_on_the_scores():
    view = widgets.playground()
    figure_before = view.image.value
    view.beta.value = 0.0  # every score times 0: all keys alike
    np.testing.assert_allclose(view.weights, np.full((3, 3), 1 / 3))
    np.testing.assert_allclose(view.output, np.tile(view.V.mean(axis=0), (3, 1)))
    assert "the formula uses 1/√d_k = 0.707" in panel_text(view)
    assert "0.333" in panel_text(view)
    assert view.image.value != figure_before
    view.beta.value = 2.5
    S = view.scores
    for i in range(3):
        np.testing.assert_allclose(view.weights[i], loop_softmax(2.5 * S[i]))
    view.reset.click()
    assert view.beta.value == pytest.approx(1 / np.sqrt(2))
    assert compare("output", view.output).ok


def test_playground_edits_to_x_and_the_weight_matrices_flow_through():
    view = widgets.playground()
    for j, v in enumerate([0.0, 1.0, 1.0, 0.0]):  # birds becomes (0, 1, 1, 0)
        view.cells["X"][0][j].value = v
    assert view.X[0].tolist() == [0.0, 1.0, 1.0, 0.0]
    np.testing.assert_allclose(view.Q[0], [1.0, 1.0])  # (0,1,1,0) @ W_Q
    np.testing.assert_allclose(view.K[0], [1.0, 1.0])  # (0,1,1,0) @ W_K
    view.cells["W_V"][3][1].value = 0.0  # the last row of W_V: (0, 2) -> (0, 0)
    W_V = example.W_V.copy()
    W_V[3, 1] = 0.0
    np.testing.assert_allclose(view.V, view.X @ W_V)
    np.testing.assert_allclose(view.matrix("W_V"), W_V)
    output, weights = attnlib.attention(view.Q, view.K, view.V)
    np.testing.assert_allclose(view.output, output)
    assert f"{output[1, 1]:.2f}" in panel_text(view)
    assert not compare("output", view.output).ok


# scaling explorer -------------------------------------------------------------------------------


def test_scaling_explorer_spread_grows_as_sqrt_d_k_unless_divided():
    view = widgets.scaling_explorer()
    assert view.d_k.value == 64
    assert 7.0 < view.spread["unscaled"] < 9.0  # about sqrt(64) = 8
    assert 0.85 < view.spread["scaled"] < 1.15
    assert view.largest["unscaled"] > view.largest["scaled"] + 0.2
    figure_before = view.image.value
    view.d_k.value = 256
    assert 14.0 < view.spread["unscaled"] < 18.0  # about sqrt(256) = 16
    assert 0.85 < view.spread["scaled"] < 1.15
    assert view.image.value != figure_before
    text = panel_text(view)
    assert "d_k = 256, √d_k = 16.00" in text
    assert f"{view.spread['unscaled']:.3f}" in text and f"{view.largest['scaled']:.3f}" in text


def test_scaling_explorer_numbers_come_from_the_seed_not_the_history():
    view = widgets.scaling_explorer(seed=3)
    first = dict(view.spread)
    view.d_k.value = 8
    view.d_k.value = 64
    assert view.spread == first
    assert widgets.scaling_explorer(seed=4).spread != first


def test_scaling_explorer_scores_are_dot_products_with_unequal_sizes():
    view = widgets.ScalingExplorer(seed=0, n_samples=3, n_keys=5, n_shown=2)
    view.d_k.value = 4
    assert view.scores.shape == (3, 5)
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((3, 1, 4))
    K = rng.standard_normal((3, 5, 4))
    for s in range(3):
        for j in range(5):
            assert view.scores[s, j] == pytest.approx(
                sum(Q[s, 0, i] * K[s, j, i] for i in range(4))
            )
        np.testing.assert_allclose(view.weights_scaled[s], loop_softmax(view.scores[s] / 2.0))
        np.testing.assert_allclose(view.weights_unscaled[s], loop_softmax(view.scores[s]))


# display ----------------------------------------------------------------------------------------


def test_runs_under_the_ipywidgets_version_asked_for():
    """`make test-widgets-ipywidgets7` sets ATTNLIB_IPYWIDGETS=7.7.1 (Colab's version)."""
    import ipywidgets

    wanted = os.environ.get("ATTNLIB_IPYWIDGETS")
    if not wanted:
        pytest.skip("no ipywidgets version asked for (set ATTNLIB_IPYWIDGETS)")
    assert ipywidgets.__version__ == wanted


def test_playground_tabs_are_titled_on_every_ipywidgets():
    # Tab(titles=...) is ignored by ipywidgets 7.x, which Colab runs; set_title works on both
    view = widgets.playground()
    titles = [view.matrices.get_title(i) for i in range(len(view.matrices.children))]
    assert titles == ["X", "W_Q", "W_K", "W_V"]


def test_widget_bundle_is_built_from_the_model_id_without_repr_mimebundle():
    class Widget7:  # what a container widget looks like on ipywidgets 7.x
        model_id = "abc123"

        def __repr__(self):
            return "VBox(...)"

    bundle = widgets.widget_bundle(Widget7())
    assert bundle["application/vnd.jupyter.widget-view+json"] == {
        "version_major": 2,
        "version_minor": 0,
        "model_id": "abc123",
    }
    assert bundle["text/plain"] == "VBox(...)"


@pytest.mark.parametrize("make", [widgets.playground, widgets.geometry, widgets.scaling_explorer])
def test_a_view_displays_as_a_widget_with_a_helpful_text_fallback(make):
    view = make()
    bundle = view._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.widget.model_id
    assert "@jupyter-widgets/jupyterlab-manager" in bundle["text/plain"]
    assert "jupyter labextension list" in bundle["text/plain"]
    assert "run this cell in Jupyter to use it" in bundle["text/plain"]
    assert "JupyterLab" not in bundle["text/plain"]  # Notebook 7, VS Code... run it too
    assert bytes(view.image.value).startswith(b"\x89PNG")
    fig = view.plot()  # the static figure for places without a widget front end
    try:
        assert len(fig.axes) == len(view.figure.axes) >= 2
    finally:
        plt.close(fig)


@pytest.mark.parametrize("make", [widgets.playground, widgets.geometry, widgets.scaling_explorer])
def test_redrawing_replaces_the_figure_instead_of_piling_up(make):
    view = make()

    def count():
        return [(len(ax.images), len(ax.texts), len(ax.lines)) for ax in view.figure.axes]

    first = count()
    for _ in range(3):
        view.update()
    assert count() == first
    assert len(view.figure.axes) == len(first)


# the lessons ------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
LESSON_WIDGETS = {
    "03_scoring": "geometry",
    "04_scaling": "scaling_explorer",
    "07_the_whole_formula": "playground",
}


@pytest.mark.parametrize("stem, name", LESSON_WIDGETS.items())
def test_each_lesson_shows_its_widget_static_then_live_under_try_it_yourself(stem, name):
    cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    source = ["".join(c["source"]) for c in cells]
    heading = next(i for i, s in enumerate(source) if s.startswith("## Try it yourself"))
    static = next(i for i, s in enumerate(source) if f"from attnlib.widgets import {name}" in s)
    live = static + 1
    assert heading < static, "the widget belongs under the 'Try it yourself' heading"
    view = re.search(rf"^(\w+) = {name}\(", source[static], re.M).group(1)
    assert f"{view}.plot()" in source[static]
    assert source[static].rstrip().endswith(f"show({view}.alt)"), "shown with the view's alt text"
    pictures = [o for o in cells[static]["outputs"] if "image/png" in o.get("data", {})]
    assert pictures, "the static cell stores a figure of the starting state"
    alt = getattr(widgets, name)().alt
    assert [p["metadata"]["image/png"]["alt"] for p in pictures] == [alt]
    assert "nbval-ignore-output" not in cells[static]["metadata"].get("tags", [])
    assert cells[live]["metadata"].get("tags") == ["nbval-ignore-output"]
    assert source[live].split()[0] == view, "the live cell shows the view the static cell made"


@pytest.mark.parametrize("make", [widgets.playground, widgets.geometry, widgets.scaling_explorer])
def test_a_views_figure_is_sharp_and_says_what_it_shows(make):
    import struct

    view = make()
    png = bytes(view.image.value)
    width, _ = struct.unpack(">II", png[16:24])  # the PNG header's IHDR size
    shown = int(view.image.layout.width.removesuffix("px"))
    assert (
        width == widgets.DENSITY * shown == widgets.DENSITY * round(view.figsize[0] * widgets.DPI)
    )
    assert view.caption in view.widget.children
    assert html.escape(view.alt) in view.caption.value and len(view.alt) > 60


def test_the_playground_starts_and_resets_exactly_on_one_over_root_dk():
    view = widgets.playground()
    steps = view.beta.value / view.beta.step  # the front end rounds to whole steps from min 0
    assert view.beta.min == 0.0 and abs(steps - round(steps)) < 1e-9
    assert compare("softmax_row1_scaled", view.weights[:1]).ok  # birds' row, as the document has it
    view.beta.value = 2.0
    view._reset_beta()
    assert abs(view.beta.value - 1 / np.sqrt(2)) < 1e-15


# accessible names -------------------------------------------------------------------------------


def tip(widget):
    """A widget's tooltip on ipywidgets 8 (``tooltip``) or 7.x (``description_tooltip``)."""
    trait = "tooltip" if "tooltip" in widget.trait_names() else "description_tooltip"
    return getattr(widget, trait, "no tooltip trait")


def tree(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from tree(child)


@pytest.mark.parametrize("make", [widgets.playground, widgets.geometry, widgets.scaling_explorer])
def test_every_control_has_a_name_and_the_figure_its_alt(make):
    """What the browser test reads, on any ipywidgets: a slider's tooltip starts with its label
    (NAMES_JS names the handle with it), nothing is left with a null tooltip (ipywidgets 8 writes
    title="null"), and the snippet that gives the figure its alt is in the view with that alt."""
    view = make()
    sliders = [
        w for w in tree(view.widget) if isinstance(w, ipywidgets.FloatSlider | ipywidgets.IntSlider)
    ]
    assert sliders and all(tip(s).startswith(f"{s.description}: ") for s in sliders)
    assert [w for w in tree(view.widget) if tip(w) is None] == []
    (names,) = [w for w in tree(view.widget) if isinstance(w, ipywidgets.Output)]
    assert [o["data"]["application/javascript"] for o in names.outputs] == [widgets.NAMES_JS]
    data_alt = re.search(r'data-alt="([^"]*)"', view.caption.value).group(1)
    assert html.unescape(data_alt) == view.alt


def test_each_number_box_of_the_playground_is_named_by_matrix_row_and_column():
    view = widgets.playground()
    assert tip(view.cells["X"][0][1]) == f"X, {example.TOKENS[0]}, dim 2"
    assert tip(view.cells["W_V"][1][0]) == "W_V, dim 2, col 1"
    named = [tip(w) for rows in view.cells.values() for row in rows for w in row]
    assert len(set(named)) == len(named)  # no two boxes share a name
