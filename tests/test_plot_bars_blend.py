"""attnlib.plot.bars and attnlib.plot.blend: the figures of lessons 04 and 06."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnlib import plot  # noqa: E402

KEYS = ("k1", "k2", "k3", "k4", "k5")  # n_k = 5


def test_bars_draws_one_labelled_bar_per_entry():
    M = np.array([[0.1, 0.2, 0.3, 0.15, 0.25], [0.5, 0.1, 0.1, 0.2, 0.1]])  # (2, n_k)
    ax = plot.bars(M, ["unscaled", "scaled"], KEYS, decimals=2)
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == sorted(round(v, 6) for v in M.ravel())
    labels = [t.get_text() for t in ax.texts]
    assert "0.50" in labels and "0.15" in labels and len(labels) == M.size
    assert [t.get_text() for t in ax.get_xticklabels()] == list(KEYS)
    plt.close("all")


def test_bars_names_the_shape_mismatch():
    with pytest.raises(ValueError, match=r"bars: M has shape \(2, 5\), but there are 2 row"):
        plot.bars(np.ones((2, 5)), ["a", "b"], KEYS[:4])


def test_blend_draws_values_outputs_and_weighted_lines():
    V = np.arange(10.0).reshape(5, 2)  # (n_k, d_v)
    weights = np.full((3, 5), 0.2)  # (n_q, n_k)
    output = weights @ V  # (n_q, d_v)
    ax = plot.blend(V, output, KEYS, ["a", "b", "c"], weights=weights)
    assert len(ax.lines) == 3 * 5  # one line from each output to each value
    texts = [t.get_text() for t in ax.texts]
    assert "  out: b" in texts and "  v: k5" in texts
    plt.close("all")


def test_blend_rejects_values_that_are_not_in_the_plane():
    with pytest.raises(ValueError, match=r"blend: V must have shape \(n, 2\).*\(5, 3\)"):
        plot.blend(np.ones((5, 3)), np.ones((3, 2)), KEYS, "abc")


def test_blend_rejects_weights_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"weights must have shape \(n_q, n_k\) = \(3, 5\)"):
        plot.blend(np.ones((5, 2)), np.ones((3, 2)), KEYS, "abc", weights=np.ones((5, 3)))


def test_blend_labels_cover_no_point_and_no_other_label():
    # lesson 06's figure: the worked example's values, outputs and weights
    V = np.array([[0.0, 4.0], [4.0, 2.0], [2.0, 4.0]])  # (n_k, d_v)
    scores = np.array([[3.0, 9.0, 6.0], [6.0, 4.0, 5.0], [6.0, 8.0, 7.0]]) / np.sqrt(2)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)  # (n_q, n_k)
    output = weights @ V  # (n_q, d_v)
    ax = plot.blend(
        V, output, ["birds", "eat", "seeds"], ["birds", "eat", "seeds"], weights=weights
    )
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    points = ax.transData.transform(np.vstack([V, output]))  # (6, 2) in pixels
    for text, box in zip(ax.texts, boxes, strict=True):
        assert not any(box.contains(x, y) for x, y in points), f"{text.get_text()!r} covers a point"
    for i in range(len(boxes)):
        for j in range(i):
            assert not boxes[i].overlaps(boxes[j]), (ax.texts[i].get_text(), ax.texts[j].get_text())
    plt.close("all")
