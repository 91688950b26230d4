"""Knobs on the formula: three live views of attention (ipywidgets).

- ``playground()``: edit the tokens' vectors or the weight matrices, and a multiplier on the scores;
  the score and weight heatmaps and the output table follow.
- ``geometry()``: move birds' query in the plane (d_k = 2); its dot product with
  each key, its weights and its output follow.
- ``scaling_explorer()``: pick d_k; random dot products spread out as sqrt(d_k),
  and softmax picks one winner unless each score is first shrunk by sqrt(d_k).

Each returns a view object: ``view.widget`` is the widget tree (a notebook cell
that ends with ``view`` shows it), ``view.update()`` recomputes, and the numbers
it shows are attributes (``view.weights``, ``view.output``...). The views do no
math of their own: the numbers come from ``attnlib.core`` and the figures from
``attnlib.plot``. ``view.plot()`` draws the current state as a plain matplotlib
figure, for places where no widget front end runs (nbval, GitHub's viewer).
Every control has a name a screen reader reads out (its tooltip) and the figure
carries the view's alt text (``view.alt``; see ``NAMES_JS`` for how they reach the page).

Examples
--------
>>> view = geometry()
>>> print(", ".join(f"{w:.3f}" for w in view.weights))  # birds' weights, as in the document
0.013, 0.882, 0.106
>>> view.q_2.value = 0.0  # turn birds' query to lie along the first axis
>>> print(", ".join(f"{s:.0f}" for s in view.scores))
3, 1, 2
"""

import html
import io

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from . import example, plot
from .core import attention, project, qk_scores, scale_scores, softmax

DPI = 72  # the figure is re-drawn on every slider move: small and quick ...
DENSITY = 2  # ... but drawn at twice the pixels it is shown at, so it is sharp on any screen

FALLBACK = (
    "A live widget: run this cell in Jupyter to use it (the figure above shows its "
    "starting state). If this text is still all you see after running it, the widgets "
    "extension is missing: `jupyter labextension list` should show "
    "@jupyter-widgets/jupyterlab-manager."
)


# ipywidgets gives a slider's handle (a div with role="slider", or jQuery UI's span on 7.x) no
# accessible name, puts a box's tooltip on its hidden label rather than on the box (axe-core:
# "Form elements must have labels"), and an Image's <img> no alt, and offers no trait for any
# of them. This snippet, run by the front end (it sits in an Output widget in each view, so it
# runs where the view runs: JupyterLab, Notebook 7, JupyterLite, Colab), names each handle from
# its slider's tooltip (else its label) and each unlabelled box from its tooltip, and gives
# each figure its view's alt text, again whenever a view is drawn. Where a front end runs no
# JavaScript, the tooltips and the caption under the figure remain.
NAMES_JS = """(function () {
  function name() {
    document.querySelectorAll('.attnlib-view').forEach(function (view) {
      view.querySelectorAll('.widget-slider').forEach(function (slider) {
        var label = slider.querySelector('.widget-label');
        var handle = slider.querySelector('[role="slider"], .ui-slider-handle');
        if (!label || !handle) return;
        var text = label.getAttribute('title') || label.textContent;
        if (text && handle.getAttribute('aria-label') !== text) {
          handle.setAttribute('aria-label', text);
        }
      });
      view.querySelectorAll('.widget-text').forEach(function (box) {  // a box with no label
        var label = box.querySelector('.widget-label');
        var input = box.querySelector('input');
        var text = label && !label.textContent.trim() && label.getAttribute('title');
        if (input && text && input.getAttribute('aria-label') !== text) {
          input.setAttribute('aria-label', text);
        }
      });
      var img = view.querySelector('img.attnlib-figure');
      var alt = view.querySelector('.attnlib-alt[data-alt]');
      if (img && alt && img.getAttribute('alt') !== alt.dataset.alt) img.alt = alt.dataset.alt;
    });
  }
  if (!window.attnlibNames) {  // one observer per page, however many views run
    window.attnlibNames = new MutationObserver(name);
    window.attnlibNames.observe(document.body, {childList: true, subtree: true});
  }
  name();
})();"""


def tooltip(widget, text):
    """Set the text a front end shows on hover and reads out, on ipywidgets 8 and 7.x.

    Left unset, ipywidgets 8 writes ``title="null"`` on a control's label; with no
    description, the text also names an input box (its ``title``).
    """
    if "tooltip" in widget.trait_names():  # ipywidgets 8
        widget.tooltip = text
    else:  # 7.x: only the description widgets have one
        widget.description_tooltip = text
    return widget


def no_null_titles(widget):
    """Give every widget in the tree that has no tooltip an empty one (see ``tooltip``)."""
    trait = "tooltip" if "tooltip" in widget.trait_names() else "description_tooltip"
    if trait in widget.trait_names() and getattr(widget, trait) is None:
        setattr(widget, trait, "")
    for child in getattr(widget, "children", ()):
        no_null_titles(child)
    return widget


def names_widget():
    """A hidden Output widget whose one output, the NAMES_JS snippet, names the view's controls."""
    names = widgets.Output(layout={"display": "none"})
    names.outputs = (
        {
            "output_type": "display_data",
            "data": {"application/javascript": NAMES_JS, "text/plain": ""},
            "metadata": {},
        },
    )
    names.add_class("attnlib-names")
    return names


def widget_bundle(widget):
    """The display bundle of a widget, on ipywidgets 8 and on 7.x (Colab runs 7.7.1).

    ipywidgets 8 gives every widget ``_repr_mimebundle_``; on 7.x a widget only
    displays itself (``_ipython_display_``), so the bundle is built from its
    ``model_id`` the way 7.x does.
    """
    if hasattr(widget, "_repr_mimebundle_"):
        return widget._repr_mimebundle_()
    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    return {"text/plain": repr(widget), "application/vnd.jupyter.widget-view+json": view}


def titled_tabs(children, titles):
    """A Tab with one title per child; ``set_title`` works on ipywidgets 7.x and 8.

    (``Tab(titles=...)`` is 8 only: 7.x ignores it and shows no titles.)
    """
    tab = widgets.Tab(children)
    for index, title in enumerate(titles):
        tab.set_title(index, title)
    return tab


def _number(v, decimals):
    return f"{v + 0.0:.{decimals}f}"  # + 0.0 turns -0.0 into 0.0


def _table(values, rows, cols, decimals, caption=""):
    """An HTML table of numbers with labelled rows and columns."""
    values = np.asarray(values, dtype=np.float64).reshape(len(rows), len(cols))
    esc = html.escape
    pad = ' style="padding: 0.1em 0.6em"'
    head = "".join(f"<th{pad}>{esc(c)}</th>" for c in cols)
    body = "".join(
        f"<tr><th{pad}>{esc(r)}</th>"
        + "".join(f"<td{pad}>{_number(v, decimals)}</td>" for v in row)
        + "</tr>"
        for r, row in zip(rows, values, strict=True)
    )
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (
        '<table class="attnlib-table" style="text-align:right; margin-right:1.5em">'
        f"{cap}<tr><th></th>{head}</tr>{body}</table>"
    )


def _grid(M, rows, cols, name):
    """A grid of number boxes holding the matrix M, with labelled rows and columns.

    Each box is named for a screen reader by its matrix, row and column ("X, birds, dim 1").
    """
    cells = [
        [
            tooltip(
                widgets.FloatText(
                    value=float(v), step=1.0, continuous_update=False, layout={"width": "4.5em"}
                ),
                f"{name}, {r}, {c}",
            )
            for v, c in zip(row, cols, strict=True)
        ]
        for row, r in zip(M, rows, strict=True)
    ]
    head = [widgets.HTML("")] + [widgets.HTML(c) for c in cols]
    body = [w for r, row in zip(rows, cells, strict=True) for w in [widgets.HTML(r)] + row]
    layout = widgets.Layout(grid_template_columns=f"4em repeat({len(cols)}, 5em)", width="auto")
    return widgets.GridBox(head + body, layout=layout), cells


class _View:
    """The plumbing every view shares: controls, an HTML panel of numbers and a figure.

    A subclass sets ``figsize``, passes its controls (the widgets whose ``value``
    drives it) to ``__init__``, and defines ``compute()`` (numbers, from
    attnlib.core), ``html()`` (the numbers panel), ``make_axes(fig)`` and
    ``draw(axes)`` (the figure, via attnlib.plot).
    """

    figsize = (7.0, 3.0)
    alt = "A figure of the numbers above."  # each view says what its figure shows

    def __init__(self, controls, name):
        self.name = name
        self.controls = controls
        self.numbers = widgets.HTML()
        width, height = (round(x * DPI) for x in self.figsize)
        # shown at the figure's size in layout pixels, drawn with DENSITY times the pixels
        self.image = widgets.Image(format="png", layout={"width": f"{width}px"})
        alt = html.escape(self.alt)  # also in data-alt, from where NAMES_JS gives it to the <img>
        self.caption = widgets.HTML(f'<p class="attnlib-alt" data-alt="{alt}">Figure: {alt}</p>')
        self.numbers.add_class("attnlib-numbers")
        self.image.add_class("attnlib-figure")
        self.caption.add_class("attnlib-figure-alt")
        # a figure outside pyplot: redrawn in place, never shown twice by the inline backend
        self.figure = Figure(figsize=self.figsize, dpi=DPI)
        self.axes = None
        self.updates = 0
        for control in controls:
            control.observe(self.update, names="value")
        self.widget = widgets.VBox(
            [widgets.VBox(controls), self.numbers, self.image, self.caption, names_widget()],
            layout=widgets.Layout(width="auto"),
        )
        no_null_titles(self.widget)
        self.widget.add_class("attnlib-view")
        self.widget.add_class(f"attnlib-{name}")
        self.update()

    def update(self, change=None):
        """Recompute from the controls, then refresh the numbers and the figure."""
        self.compute()
        self.numbers.value = self.html()  # the numbers first: text is quicker than a figure
        if self.axes is None:
            self.axes = self.make_axes(self.figure)
        for ax in self.axes:  # keep the axes and their ticks: rebuilding them is the slow part
            for artist in [*ax.images, *ax.texts, *ax.lines, *ax.patches, *ax.collections]:
                artist.remove()
        self.draw(self.axes)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DENSITY * DPI)
        self.image.value = buffer.getvalue()
        self.updates += 1

    def plot(self):
        """Draw the current state as a pyplot figure (for a static cell; end it with plt.show())."""
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=self.figsize)
        self.draw(self.make_axes(fig))
        return fig

    def _repr_mimebundle_(self, **kwargs):
        data = widget_bundle(self.widget)
        data["text/plain"] = f"{self.name}: {FALLBACK}"
        return data


class Playground(_View):
    """The whole formula on the worked example, with X and the weight matrices editable.

    The slider ``beta`` multiplies the scores before softmax (an inverse
    temperature): weights = softmax(beta * S). The formula's choice is
    beta = 1/sqrt(d_k), where it starts; 0 gives equal weights, large values
    give all the weight to the top score.
    """

    figsize = (7.6, 3.0)
    alt = (
        "Two heatmaps with each cell's number written in it: left, the scores S = Q K^T of "
        "every query (rows) with every key (columns); right, the weights softmax(beta S), "
        "each row summing to 1."
    )

    def __init__(self):
        self.tokens = example.TOKENS
        self.d_k = example.W_K.shape[1]
        d_model = example.X.shape[1]
        dims = [f"dim {j + 1}" for j in range(d_model)]
        outs = [f"col {j + 1}" for j in range(self.d_k)]
        self.cells = {}  # name -> rows of FloatText, one per entry of that matrix
        tabs = []
        for name, M, rows, cols in (
            ("X", example.X, self.tokens, dims),
            ("W_Q", example.W_Q, dims, outs),
            ("W_K", example.W_K, dims, outs),
            ("W_V", example.W_V, dims, outs),
        ):
            grid, self.cells[name] = _grid(M, rows, cols, name)
            tabs.append(grid)
        self.matrices = titled_tabs(tabs, tuple(self.cells))
        self.beta = widgets.FloatSlider(
            value=1 / np.sqrt(self.d_k),
            min=0.0,
            max=3.0,
            # the front end rounds the value to a whole number of steps: with steps of
            # 1/sqrt(d_k) / 100 the formula's own choice, 100 steps, is exactly on the slider
            step=1 / np.sqrt(self.d_k) / 100,
            readout_format=".3f",
            description="β × scores",
            style={"description_width": "6em"},
        )
        tooltip(self.beta, "β × scores: the number each score is multiplied by before softmax")
        self.beta.add_class("attnlib-beta")
        self.reset = widgets.Button(description=f"β = 1/√d_k = {1 / np.sqrt(self.d_k):.3f}")
        self.reset.on_click(self._reset_beta)
        entries = [w for rows in self.cells.values() for row in rows for w in row]
        super().__init__(entries + [self.beta], "playground")
        self.widget.children = (self.matrices, widgets.HBox([self.beta, self.reset])) + tuple(
            self.widget.children[1:]
        )
        no_null_titles(self.widget)

    def _reset_beta(self, button=None):
        self.beta.value = 1 / np.sqrt(self.d_k)

    def matrix(self, name):
        """A matrix as currently typed: ``"X"``, ``"W_Q"``, ``"W_K"`` or ``"W_V"``."""
        return np.array([[w.value for w in row] for row in self.cells[name]], dtype=np.float64)

    @property
    def X(self):
        """The token vectors as currently typed, shape (n, d_model)."""
        return self.matrix("X")

    def compute(self):
        X, W_Q, W_K, W_V = (self.matrix(name) for name in ("X", "W_Q", "W_K", "W_V"))
        self.Q, self.K, self.V = project(X, W_Q), project(X, W_K), project(X, W_V)
        self.scores = qk_scores(self.Q, self.K)  # (n_q, n_k)
        # the knob: the formula multiplies the scores by beta = 1/sqrt(d_k)
        self.weights = softmax(self.beta.value * self.scores)  # (n_q, n_k)
        self.output = self.weights @ self.V  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)

    def html(self):
        at_mark = np.isclose(self.beta.value, 1 / np.sqrt(self.d_k), atol=0.005)
        note = (
            "the formula's choice, 1/√d_k"
            if at_mark
            else f"the formula uses 1/√d_k = {1 / np.sqrt(self.d_k):.3f}"
        )
        dims = tuple(f"dim {j + 1}" for j in range(self.output.shape[1]))
        return (
            f'<div class="attnlib-beta-note">β = {self.beta.value:.3f}: {note}</div>'
            '<div style="display:flex">'
            + _table(self.weights, self.tokens, self.tokens, 3, "weights A")
            + _table(self.output, self.tokens, dims, 2, "output = A V")
            + "</div>"
        )

    def make_axes(self, fig):
        fig.subplots_adjust(left=0.09, right=0.98, top=0.78, bottom=0.04, wspace=0.4)
        return fig.subplots(1, 2)

    def draw(self, axes):
        ax_s, ax_a = axes
        plot.heatmap(self.scores, self.tokens, self.tokens, ax=ax_s, title="scores S = Q Kᵀ")
        plot.heatmap(
            self.weights,
            self.tokens,
            self.tokens,
            ax=ax_a,
            title=f"weights softmax({self.beta.value:.3f} S)",
            decimals=3,
            vmin=0.0,
            vmax=1.0,
        )


class Geometry(_View):
    """One query in the plane against the worked example's three keys (d_k = 2).

    The sliders ``q_1`` and ``q_2`` are the query's two coordinates; it starts as
    the query of ``token``. The keys and values stay the worked example's.
    """

    figsize = (7.6, 3.6)
    alt = (
        "Left: the query and the three keys drawn as arrows from the origin of the plane; "
        "right: one column with the weight each key gets, its number written in each cell."
    )

    def __init__(self, token="birds"):
        self.tokens = example.TOKENS
        self.token = token
        Q = project(example.X, example.W_Q)
        self.K, self.V = project(example.X, example.W_K), project(example.X, example.W_V)
        self.d_k = self.K.shape[1]
        q = Q[self.tokens.index(token)]
        self.q_start = q
        self.q_1, self.q_2 = (
            widgets.FloatSlider(
                value=float(v), min=-5.0, max=5.0, step=0.1, description=f"q[{i + 1}]"
            )
            for i, v in enumerate(q)
        )
        for i, slider in enumerate((self.q_1, self.q_2)):
            tooltip(slider, f"q[{i + 1}]: coordinate {i + 1} of the query")
        self.q_1.add_class("attnlib-q1")
        self.q_2.add_class("attnlib-q2")
        super().__init__([self.q_1, self.q_2], "geometry")

    @property
    def q(self):
        """The query as set by the sliders, shape (d_k,) = (2,)."""
        return np.array([self.q_1.value, self.q_2.value], dtype=np.float64)

    def compute(self):
        Q = self.q[np.newaxis, :]  # (1, d_k): one query row
        self.scores = qk_scores(Q, self.K)[0]  # (n_k,): q . k_j for each key
        self.scaled = scale_scores(self.scores, self.d_k)  # (n_k,)
        output, weights = attention(Q, self.K, self.V)  # (1, d_v), (1, n_k)
        self.output, self.weights = output[0], weights[0]

    def html(self):
        per_key = np.stack([self.scores, self.scaled, self.weights], axis=1)  # (n_k, 3)
        keys = tuple(f"k: {t}" for t in self.tokens)
        q = ", ".join(_number(v, 1) for v in self.q)
        out = ", ".join(_number(v, 2) for v in self.output)
        return (
            f"<div>query q = ({q})</div>"
            + _table(per_key, keys, ("q · k", "÷ √d_k", "weight"), 3)
            + f'<div class="attnlib-output">output = ({out})</div>'
        )

    def make_axes(self, fig):
        fig.subplots_adjust(left=0.06, right=0.97, top=0.84, bottom=0.08, wspace=0.3)
        return fig.subplots(1, 2, width_ratios=(1.6, 1))

    def draw(self, axes):
        ax_q, ax_w = axes
        name = self.token if np.array_equal(self.q, self.q_start) else "yours"
        plot.arrows(self.q[np.newaxis, :], self.K, [name], self.tokens, ax=ax_q, title="q and keys")
        ax_q.set_xlim(-5.5, 5.5)  # fixed, so the picture does not jump as q moves
        ax_q.set_ylim(-5.5, 5.5)
        plot.heatmap(
            self.weights[:, np.newaxis],
            [f"k: {t}" for t in self.tokens],
            ["weight"],
            ax=ax_w,
            title="weights",
            decimals=3,
            vmin=0.0,
            vmax=1.0,
        )


class ScalingExplorer(_View):
    """Random queries and keys of width d_k: what dividing by sqrt(d_k) does.

    Entries are standard normal, so a dot product of width d_k has spread (standard
    deviation) about sqrt(d_k). Without the division, softmax gives almost all the
    weight to one key once d_k is large; with it the spread stays near 1. The same
    d_k always draws the same numbers (the generator is re-seeded on each update).
    """

    figsize = (10.5, 2.1)
    alt = (
        "Three heatmaps for two random queries and five keys, numbers written in each cell: "
        "the scores S, softmax(S) and softmax(S / sqrt(d_k)); without the division one weight "
        "per row nears 1 once d_k is large."
    )

    def __init__(self, seed=0, n_samples=400, n_keys=5, n_shown=2):
        self.seed, self.n_samples, self.n_keys, self.n_shown = seed, n_samples, n_keys, n_shown
        self.d_k = widgets.IntSlider(value=64, min=1, max=512, description="d_k")
        tooltip(self.d_k, "d_k: the width of each random query and key")
        self.d_k.add_class("attnlib-dk")
        super().__init__([self.d_k], "scaling_explorer")

    def compute(self):
        d_k = self.d_k.value
        rng = np.random.default_rng(self.seed)
        Q = rng.standard_normal((self.n_samples, 1, d_k))  # one query per sample
        K = rng.standard_normal((self.n_samples, self.n_keys, d_k))
        self.scores = qk_scores(Q, K)[:, 0, :]  # (n_samples, n_keys)
        self.scaled = scale_scores(self.scores, d_k)  # (n_samples, n_keys)
        self.weights_unscaled = softmax(self.scores)
        self.weights_scaled = softmax(self.scaled)
        self.spread = {"unscaled": self.scores.std(), "scaled": self.scaled.std()}
        self.largest = {
            "unscaled": self.weights_unscaled.max(axis=-1).mean(),
            "scaled": self.weights_scaled.max(axis=-1).mean(),
        }

    def html(self):
        d_k = self.d_k.value
        values = [
            [self.spread["unscaled"], self.largest["unscaled"]],
            [self.spread["scaled"], self.largest["scaled"]],
        ]
        return f"<div>d_k = {d_k}, √d_k = {np.sqrt(d_k):.2f}</div>" + _table(
            values,
            ("S", "S / √d_k"),
            ("spread (std) of the scores", "mean largest weight"),
            3,
            f"over {self.n_samples} random queries, {self.n_keys} keys each",
        )

    def make_axes(self, fig):
        fig.subplots_adjust(left=0.04, right=0.99, top=0.68, bottom=0.02, wspace=0.15)
        return fig.subplots(1, 3)

    def draw(self, axes):
        rows = [f"q {i + 1}" for i in range(self.n_shown)]
        cols = [f"k {j + 1}" for j in range(self.n_keys)]
        shown = slice(0, self.n_shown)
        plot.heatmap(self.scores[shown], rows, cols, ax=axes[0], title="scores S", decimals=1)
        both = ((self.weights_unscaled, "softmax(S)"), (self.weights_scaled, "softmax(S / √d_k)"))
        for ax, (weights, title) in zip(axes[1:], both, strict=True):
            plot.heatmap(weights[shown], rows, cols, ax=ax, title=title, vmin=0.0, vmax=1.0)


def playground():
    """The attention playground: editable tokens, a multiplier on the scores, live heatmaps."""
    return Playground()


def geometry(token="birds"):
    """Move one query (d_k = 2) with two sliders; see its dot products, weights and output."""
    return Geometry(token)


def scaling_explorer(seed=0):
    """A d_k slider: spread of random dot products and the largest weight, with and without."""
    return ScalingExplorer(seed)
