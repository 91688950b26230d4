"""Figures for the lessons: annotated heatmaps and query/key arrows (matplotlib).

Every function takes ``ax=None`` (a new figure when None), returns the Axes and
never calls ``plt.show()``: the notebook shows the figure.
"""

import matplotlib.pyplot as plt
import numpy as np

CMAP = "cividis"  # readable with every common colour-vision deficiency, and in grey
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")  # Okabe-Ito


def _axes(ax, size=(4.2, 3.4)):
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def heatmap(M, row_labels, col_labels, ax=None, title=None, decimals=2, vmin=None, vmax=None):
    """An annotated heatmap: one cell a value, labelled rows and columns.

    Parameters
    ----------
    M : array_like of shape (n_rows, n_cols)
    row_labels, col_labels : sequence of str
        Usually the tokens: queries down the side, keys along the top.
    ax : matplotlib Axes, optional
    title : str, optional
    decimals : int
        How many decimals to write in each cell.

    Returns
    -------
    matplotlib Axes
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape != (len(row_labels), len(col_labels)):
        raise ValueError(
            f"heatmap: M has shape {M.shape}, but there are {len(row_labels)} row labels "
            f"and {len(col_labels)} column labels."
        )
    ax = _axes(ax)
    image = ax.imshow(M, cmap=CMAP, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(col_labels)), labels=col_labels)
    ax.set_yticks(range(len(row_labels)), labels=row_labels)
    ax.xaxis.tick_top()
    lo, hi = image.get_clim()
    for (i, j), v in np.ndenumerate(M):
        light = (v - lo) / ((hi - lo) or 1.0) < 0.55  # dark text on the bright end of the map
        ax.text(
            j,
            i,
            f"{v + 0.0:.{decimals}f}",
            ha="center",
            va="center",
            color="white" if light else "black",
        )
    if title:
        ax.set_title(title, pad=10)
    return ax


def arrows(Q, K, q_labels, k_labels, ax=None, title=None):
    """Queries and keys as arrows from the origin in the plane (d_k = 2 only).

    Parameters
    ----------
    Q : array_like of shape (n_q, 2)
    K : array_like of shape (n_k, 2)
    q_labels, k_labels : sequence of str
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    for name, M in (("Q", Q), ("K", K)):
        if M.ndim != 2 or M.shape[1] != 2:
            raise ValueError(
                f"arrows: {name} must have shape (n, 2) to draw in the plane, got {M.shape}."
            )
    ax = _axes(ax, size=(4.6, 4.6))
    for rows, labels, style, tag in ((Q, q_labels, "-", "q"), (K, k_labels, "--", "k")):
        for i, (v, label) in enumerate(zip(rows, labels, strict=False)):
            colour = COLOURS[i % len(COLOURS)]
            ax.annotate(
                "",
                xy=v,
                xytext=(0, 0),
                arrowprops=dict(arrowstyle="->", color=colour, lw=2, linestyle=style),
            )
            ax.text(v[0], v[1], f" {tag}: {label}", color=colour, va="bottom")
    reach = max(np.abs(Q).max(), np.abs(K).max()) * 1.25 + 0.5
    ax.set_xlim(-0.5, reach)
    ax.set_ylim(-0.5, reach)
    ax.set_aspect("equal")
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    return ax
