import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnlib import example, plot  # noqa: E402


def test_heatmap_labels_both_axes_and_writes_each_value():
    S = example.DOCUMENT["scores"].values
    ax = plot.heatmap(S, example.TOKENS, example.TOKENS, decimals=0, title="scores")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(example.TOKENS)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(example.TOKENS)
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.0f}" for v in S.ravel())
    assert ax.images[0].get_cmap().name == plot.CMAP
    plt.close(ax.figure)


def test_heatmap_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    assert plot.heatmap(np.eye(2), ["a", "b"], ["c", "d"], ax=right) is right
    assert not left.images
    plt.close(fig)


def test_heatmap_refuses_labels_that_do_not_fit():
    with pytest.raises(ValueError, match=r"^heatmap: M has shape \(2, 3\), but there are 2 row"):
        plot.heatmap(np.ones((2, 3)), ["a", "b"], ["c", "d"])


def test_arrows_draws_one_arrow_per_query_and_key():
    Q, K = example.DOCUMENT["Q"].values, example.DOCUMENT["K"].values
    ax = plot.arrows(Q, K, example.TOKENS, example.TOKENS)
    assert len([a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]) == 6
    labels = sorted(t.get_text().strip() for t in ax.texts if t.get_text().strip())
    assert labels == sorted(
        [f"q: {t}" for t in example.TOKENS] + [f"k: {t}" for t in example.TOKENS]
    )
    plt.close(ax.figure)


def test_arrows_need_two_dimensions():
    with pytest.raises(ValueError, match=r"^arrows: Q must have shape \(n, 2\).*got \(3, 4\)"):
        plot.arrows(np.ones((3, 4)), np.ones((3, 2)), "abc", "abc")


def test_show_gives_a_figure_its_alt_text_and_twice_the_pixels():
    import base64
    import struct

    fig = plt.figure(figsize=(3, 2), dpi=72)
    data, metadata = plot.figure_bundle(fig, "  A blank frame.  ")
    plt.close(fig)
    png = base64.b64decode(data["image/png"])
    width, height = struct.unpack(">II", png[16:24])  # the PNG header's IHDR size
    assert (width, height) == (432, 288)  # 2 x (216, 144): sharp on a high-density screen
    assert metadata["image/png"] == {"alt": "A blank frame.", "width": 216, "height": 144}
    assert data["text/plain"] == "[figure] A blank frame."


@pytest.mark.parametrize("alt", ["", "   ", None])
def test_show_refuses_a_figure_without_alt_text(alt):
    fig = plt.figure()
    with pytest.raises(ValueError, match=r"show: alt must be a sentence .* got"):
        plot.show(alt, fig)
    assert not plt.fignum_exists(fig.number)  # closed all the same


@pytest.mark.parametrize(
    "n_q, n_k, block_size, query_block_size",
    [(12, 12, 3, None), (5, 7, 3, 2), (7, 5, 2, 3), (10, 10, 4, 4), (6, 6, 6, 6)],
)
def test_tiles_classify_like_the_causal_mask(n_q, n_k, block_size, query_block_size):
    from attnlib import causal_mask

    b_q = block_size if query_block_size is None else query_block_size
    allowed = causal_mask(n_q, n_k)  # top-left, as the tiles assume
    want = {"computed": 0, "diagonal": 0, "skipped": 0}
    for r0 in range(0, n_q, b_q):
        for c0 in range(0, n_k, block_size):
            tile = allowed[r0 : r0 + b_q, c0 : c0 + block_size]
            want["computed" if tile.all() else "skipped" if not tile.any() else "diagonal"] += 1
    ax, counts = plot.tiles(n_q, n_k, block_size, query_block_size, causal=True)
    assert counts == want
    letters = [t.get_text() for t in ax.texts]
    assert sorted(letters) == sorted(
        plot.TILE_KINDS[kind][1] for kind, count in want.items() for _ in range(count)
    )  # every tile lettered: its kind is not told by colour alone
    hatches = {p.get_hatch() or "" for p in ax.patches}
    assert hatches == {plot.TILE_KINDS[kind][0] for kind, count in want.items() if count}
    plt.close(ax.figure)


def test_tiles_without_causal_computes_every_tile():
    ax, counts = plot.tiles(7, 5, 2, 3)
    assert counts == {"computed": 3 * 3, "diagonal": 0, "skipped": 0}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["C: computed"]
    plt.close(ax.figure)
