"""Figures for the lessons: annotated heatmaps and query/key arrows (matplotlib).

Every function takes ``ax=None`` (a new figure when None), returns the Axes and
never calls ``plt.show()``: the notebook shows the figure with ``show(alt)``, which
gives it alt text and draws it sharp on high-density screens.
"""

import base64
import io

import matplotlib.pyplot as plt
import numpy as np

CMAP = "cividis"  # readable with every common colour-vision deficiency, and in grey
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")  # Okabe-Ito
# colour is never the only cue: the i-th series also gets the i-th line style and marker
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "^", "D", "v", "P", "X")
HATCHES = ("", "//", "..", "xx", "\\\\", "++")


def _axes(ax, size=(4.2, 3.4)):
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def _labelled_matrix(M, row_labels, col_labels, where):
    """``M`` as a float matrix with one label per row and one per column.

    Parameters
    ----------
    M : array_like of shape (n_rows, n_cols)
    row_labels, col_labels : sequence of str
    where : str
        The public function that was called; the error message starts with it.

    Returns
    -------
    ndarray of shape (n_rows, n_cols)

    Raises
    ------
    ValueError
        When ``M`` is not 2-D or its shape is not (len(row_labels), len(col_labels)).
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape != (len(row_labels), len(col_labels)):
        raise ValueError(
            f"{where}: M has shape {M.shape}, but there are {len(row_labels)} row labels "
            f"and {len(col_labels)} column labels."
        )
    return M


def _check_in_the_plane(where, rows="n", **named):
    """Refuse any array that is not a stack of 2-D points.

    Parameters
    ----------
    where : str
        The public function that was called; the error message starts with it.
    rows : str
        How the message names the number of rows, e.g. ``"n_k"``.
    **named : ndarray
        The arrays to check, by the name the message gives them, checked in order.

    Raises
    ------
    ValueError
        When an array is not of shape (rows, 2).
    """
    for name, M in named.items():
        if M.ndim != 2 or M.shape[1] != 2:
            raise ValueError(
                f"{where}: {name} must have shape ({rows}, 2) to draw in the plane, got {M.shape}."
            )


def _arrow(ax, v, colour, style, width):
    """Draw ``v`` as an arrow from the origin."""
    props = dict(arrowstyle="->", color=colour, lw=width, linestyle=style)
    ax.annotate("", xy=v, xytext=(0, 0), arrowprops=props)


def _frame_the_plane(ax, title, through_origin=True):
    """Equal scales on both axes, a light grid, the title, and grey lines through the origin.

    Parameters
    ----------
    ax : matplotlib Axes
    title : str or None
    through_origin : bool
        Draw the x and y axes through (0, 0) as thin grey lines.

    Returns
    -------
    matplotlib Axes
    """
    ax.set_aspect("equal")
    if through_origin:
        ax.axhline(0, color="grey", lw=0.5)
        ax.axvline(0, color="grey", lw=0.5)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
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
    M = _labelled_matrix(M, row_labels, col_labels, where="heatmap")
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
    _check_in_the_plane("arrows", Q=Q, K=K)
    ax = _axes(ax, size=(4.6, 4.6))
    for rows, labels, style, tag in ((Q, q_labels, "-", "q"), (K, k_labels, "--", "k")):
        for i, (v, label) in enumerate(zip(rows, labels, strict=False)):
            colour = COLOURS[i % len(COLOURS)]
            _arrow(ax, v, colour, style, 2)
            ax.text(v[0], v[1], f" {tag}: {label}", color=colour, va="bottom")
    reach = max(np.abs(Q).max(), np.abs(K).max()) * 1.25 + 0.5
    ax.set_xlim(-0.5, reach)
    ax.set_ylim(-0.5, reach)
    return _frame_the_plane(ax, title)


def bars(M, row_labels, col_labels, ax=None, title=None, decimals=3):
    """Grouped bars: one group per column, one bar per row, each bar labelled.

    Made for putting two weight rows side by side, such as birds' softmax
    without and with scaling, so a learner sees how much each key gets.

    Parameters
    ----------
    M : array_like of shape (n_rows, n_cols)
        One row per series (a bar colour), one column per group.
    row_labels : sequence of str
        The series, shown in the legend, e.g. ``["unscaled", "scaled"]``.
    col_labels : sequence of str
        The groups along the x axis, usually the keys.
    ax : matplotlib Axes, optional
    title : str, optional
    decimals : int
        How many decimals to write above each bar.

    Returns
    -------
    matplotlib Axes
    """
    M = _labelled_matrix(M, row_labels, col_labels, where="bars")
    ax = _axes(ax, size=(5.0, 3.2))
    n_rows, n_cols = M.shape
    width = 0.8 / n_rows
    for i, (row, label) in enumerate(zip(M, row_labels, strict=True)):
        x = np.arange(n_cols) + (i - (n_rows - 1) / 2) * width
        drawn = ax.bar(
            x, row, width, label=label, color=COLOURS[i % len(COLOURS)], hatch=HATCHES[i % 6]
        )
        ax.bar_label(drawn, labels=[f"{v + 0.0:.{decimals}f}" for v in row], fontsize=8)
    ax.set_xticks(range(n_cols), labels=col_labels)
    ax.set_ylim(0, max(M.max(), 0) * 1.15 or 1.0)
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return ax


def blend(V, output, v_labels, out_labels, weights=None, ax=None, title=None):
    """Value rows and output rows as points in the plane (d_v = 2 only).

    Each output row is a weighted average of the value rows, so it lies inside
    the shape the values span. With ``weights`` given, a line joins each output
    to each value, thicker the more weight that value gets.

    Parameters
    ----------
    V : array_like of shape (n_k, 2)
    output : array_like of shape (n_q, 2)
    v_labels, out_labels : sequence of str
    weights : array_like of shape (n_q, n_k), optional
        Row i says how much of each value output row i took.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib Axes
    """
    V, output = np.asarray(V, dtype=np.float64), np.asarray(output, dtype=np.float64)
    _check_in_the_plane("blend", V=V, output=output)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(output), len(V)):
            raise ValueError(
                f"blend: weights must have shape (n_q, n_k) = ({len(output)}, {len(V)}), "
                f"got {weights.shape}."
            )
    ax = _axes(ax, size=(4.6, 4.6))
    points = np.vstack([V, output])  # (n_k + n_q, 2), what a label must not cover
    centre = V.mean(axis=0)
    for v, label in zip(V, v_labels, strict=False):
        ax.scatter(*v, s=80, marker="s", color="grey")
        outward = v - centre  # outputs lie inside the values' hull: label the values outside it
        _label_at(ax, v, f"  v: {label}", np.arctan2(outward[1], outward[0]), "dimgrey")
    for i, (o, label) in enumerate(zip(output, out_labels, strict=False)):
        colour, style = COLOURS[i % len(COLOURS)], LINESTYLES[i % len(LINESTYLES)]
        if weights is not None:
            for v, w in zip(V, weights[i], strict=True):
                ax.plot([o[0], v[0]], [o[1], v[1]], style, color=colour, lw=0.5 + 5 * w, alpha=0.5)
        ax.scatter(*o, s=60, color=colour, marker=MARKERS[i % len(MARKERS)], zorder=3)
        _label_at(ax, o, f"  out: {label}", _free_direction(o, points), colour)
    pad = np.array([1.4, 0.8])  # room for a label beside a point: wider than it is tall
    lo, hi = points.min(axis=0) - pad, points.max(axis=0) + pad
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    return _frame_the_plane(ax, title, through_origin=False)


def _free_direction(p, points):
    """The angle (radians) from p that lies furthest from the directions to the other points.

    The lines of a blend run from each output to every value, so the widest gap between
    the directions to the other points is where a label crosses no line and no point.
    """
    others = points[np.linalg.norm(points - p, axis=1) > 1e-9] - p  # (m, 2)
    if len(others) == 0:
        return 0.0
    angles = np.sort(np.arctan2(others[:, 1], others[:, 0]))  # (m,)
    gaps = np.diff(np.append(angles, angles[0] + 2 * np.pi))  # gap after each direction
    k = int(np.argmax(gaps))
    return float(angles[k] + gaps[k] / 2)


def _label_at(ax, p, text, angle, colour):
    """Write text beside point p, 9 points away in the direction angle, aligned away from p."""
    c, s = np.cos(angle), np.sin(angle)
    ha = "left" if c > 0.4 else "right" if c < -0.4 else "center"
    va = "bottom" if s > 0.4 else "top" if s < -0.4 else "center"
    ax.annotate(
        text,
        p,
        xytext=(9 * c, 9 * s),
        textcoords="offset points",
        ha=ha,
        va=va,
        color=colour,
        zorder=4,
        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
    )


def alignment(q, K, q_label, k_labels, ax=None, title=None, decimals=0):
    """One query against every key in the plane, each key labelled with its angle and score.

    The dot product is ``|q| |k| cos(angle)``: a thin arc marks the angle from the
    query to each key, and each key's label gives that angle and the score, so a
    learner can see that alignment and length both count (d_k = 2 only).

    Parameters
    ----------
    q : array_like of shape (2,)
        One query.
    K : array_like of shape (n_k, 2)
        The keys.
    q_label : str
        The query's token.
    k_labels : sequence of str
        One token per key.
    ax : matplotlib Axes, optional
    title : str, optional
    decimals : int
        How many decimals to write for each score.

    Returns
    -------
    matplotlib Axes
    """
    from matplotlib.patches import Arc

    q, K = np.asarray(q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if q.shape != (2,):
        raise ValueError(f"alignment: q must have shape (2,) to draw in the plane, got {q.shape}.")
    _check_in_the_plane("alignment", rows="n_k", K=K)
    if len(k_labels) != len(K):
        raise ValueError(
            f"alignment: K has {len(K)} rows but there are {len(k_labels)} key labels."
        )
    ax = _axes(ax, size=(4.6, 4.6))
    placed = {}  # labels already written at a point: the next one there goes below them

    def label(v, text, colour):
        at = (round(float(v[0]), 6), round(float(v[1]), 6))
        below = placed.get(at, 0)
        placed[at] = below + 1
        ax.annotate(
            text, xy=v, xytext=(4, 2 - 13 * below), textcoords="offset points", color=colour
        )

    q_angle = np.degrees(np.arctan2(q[1], q[0]))
    _arrow(ax, q, "black", "-", 2.5)
    label(q, f"q: {q_label}", "black")
    reach = max(np.abs(K).max(), np.abs(q).max())
    for j, (k, name) in enumerate(zip(K, k_labels, strict=True)):
        colour = COLOURS[j % len(COLOURS)]
        _arrow(ax, k, colour, "--", 2)
        score = float(q @ k) + 0.0
        lengths = float(np.linalg.norm(q) * np.linalg.norm(k))
        if lengths == 0:  # a zero vector has no direction, so no angle
            label(k, f"k: {name}  q·k = {score:.{decimals}f}", colour)
            continue
        angle = np.degrees(np.arccos(np.clip(score / lengths, -1.0, 1.0)))
        k_angle = np.degrees(np.arctan2(k[1], k[0]))
        # an Arc runs anticlockwise from theta1 to theta2: start from whichever arrow is behind
        start = q_angle if (k_angle - q_angle) % 360 <= 180 else k_angle
        radius = reach * (0.18 + 0.08 * j)  # one arc per key, each at its own radius
        ax.add_patch(
            Arc((0, 0), 2 * radius, 2 * radius, theta1=start, theta2=start + angle, color=colour)
        )
        label(k, f"k: {name}  {angle:.0f}°, q·k = {score:.{decimals}f}", colour)
    ax.set_xlim(min(0.0, K[:, 0].min(), q[0]) - 0.5, reach * 1.25 + 2.0)  # room for labels
    ax.set_ylim(min(0.0, K[:, 1].min(), q[1]) - 0.5, reach * 1.25 + 0.5)
    return _frame_the_plane(ax, title)


TILE_KINDS = {  # kind: (hatch, letter); the letter and the hatch carry it, not the colour
    "computed": ("//", "C"),
    "diagonal": ("xx", "D"),
    "skipped": ("", "S"),
}


def tiles(n_q, n_k, block_size, query_block_size=None, causal=False, ax=None, title=None):
    """The (n_q, n_k) score grid cut into tiles: which a blocked pass computes or skips.

    Rows are queries, columns keys. A tile is ``query_block_size`` queries by ``block_size``
    keys (the last ones shorter when the sizes do not divide). Without ``causal`` every tile
    is computed. With ``causal`` (top-left: query i sees keys ``j <= i``) a tile whose keys
    all come after its last query is skipped, never read; a tile the diagonal crosses is
    computed with its hidden part masked ("diagonal"); the rest are computed whole. Each
    tile is hatched and lettered C, D or S; a line marks the diagonal.

    Parameters
    ----------
    n_q, n_k : int
    block_size : int
        Keys per tile.
    query_block_size : int, optional
        Queries per tile; ``block_size`` when None.
    causal : bool
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    ax : matplotlib Axes
    counts : dict of str to int
        How many tiles of each kind: ``"computed"``, ``"diagonal"``, ``"skipped"``.

    Examples
    --------
    >>> _, counts = tiles(4, 4, 2, causal=True)
    >>> counts
    {'computed': 1, 'diagonal': 2, 'skipped': 1}
    """
    query_block_size = block_size if query_block_size is None else query_block_size
    ax = _axes(ax, size=(3.6, 3.6))
    counts = dict.fromkeys(TILE_KINDS, 0)
    for r0 in range(0, n_q, query_block_size):
        r1 = min(r0 + query_block_size, n_q)  # queries r0 .. r1 - 1
        for c0 in range(0, n_k, block_size):
            c1 = min(c0 + block_size, n_k)  # keys c0 .. c1 - 1
            if causal and c0 > r1 - 1:  # its first key comes after its last query
                kind = "skipped"
            elif causal and c1 - 1 > r0:  # its last key comes after its first query
                kind = "diagonal"
            else:
                kind = "computed"
            counts[kind] += 1
            hatch, letter = TILE_KINDS[kind]
            face = "0.85" if kind != "skipped" else "white"
            box = plt.Rectangle((c0, r0), c1 - c0, r1 - r0, facecolor=face, edgecolor="black")
            box.set_hatch(hatch)
            ax.add_patch(box)
            middle = ((c0 + c1) / 2, (r0 + r1) / 2)
            ax.text(*middle, letter, ha="center", va="center", fontweight="bold",
                    bbox={"facecolor": "white", "linewidth": 0})  # fmt: skip
    if causal:  # the staircase between key i (seen by query i) and key i + 1 (hidden from it)
        m = min(n_q, n_k)
        xs = np.repeat(np.arange(1, m + 1), 2)  # 1, 1, 2, 2, ..., m, m
        ys = np.repeat(np.arange(m + 1), 2)[1:-1]  # 0, 1, 1, 2, ..., m - 1, m
        ax.plot(xs, ys, "k-", linewidth=2.5)
    ax.set(xlim=(0, n_k), ylim=(n_q, 0), xlabel="keys", ylabel="queries", aspect="equal")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, pad=10)
    handles = [
        plt.Rectangle((0, 0), 1, 1, facecolor="0.85" if k != "skipped" else "white",
                      edgecolor="black", hatch=h, label=f"{letter}: {k}")
        for k, (h, letter) in TILE_KINDS.items()
        if counts[k]
    ]  # fmt: skip
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3,
              frameon=False, handlelength=1.6)  # fmt: skip
    return ax, counts


def figure_bundle(fig, alt, density=2):
    """The display bundle of a figure: a sharp PNG that carries its alt text.

    Parameters
    ----------
    fig : matplotlib Figure
    alt : str
        What the figure shows, in a sentence a reader who cannot see it can use.
    density : int
        Pixels per layout pixel: 2 draws twice as many pixels as the figure is wide, so it
        stays sharp on a high-density screen; ``width`` and ``height`` keep its size on the page.

    Returns
    -------
    data, metadata : dict, dict
        ``data`` has ``image/png`` (base64) and ``text/plain`` (the alt text, which nbval
        compares); ``metadata["image/png"]`` has ``alt``, ``width`` and ``height``, which the
        course's website writes into ``<img alt=... width=...>``.

    Examples
    --------
    >>> fig = plt.figure(figsize=(2, 1), dpi=100)
    >>> data, metadata = figure_bundle(fig, "An empty frame.")
    >>> plt.close(fig)
    >>> data["text/plain"], metadata["image/png"]["width"], metadata["image/png"]["height"]
    ('[figure] An empty frame.', 200, 100)
    """
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(
            "show: alt must be a sentence that says what the figure shows, got "
            f"{alt!r}; a reader who cannot see the figure reads it instead."
        )
    width, height = (round(float(x) * fig.dpi) for x in fig.get_size_inches())
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=density * fig.dpi)
    data = {
        "image/png": base64.b64encode(buffer.getvalue()).decode("ascii"),
        "text/plain": f"[figure] {alt.strip()}",
    }
    metadata = {"image/png": {"alt": alt.strip(), "width": width, "height": height}}
    return data, metadata


def show(alt, fig=None):
    """Show a figure in the notebook with its alt text, sharp on a high-density screen.

    Use it instead of ``plt.show()``: ``show("Birds' weights: eat gets most.")``.

    Parameters
    ----------
    alt : str
        What the figure shows, in a sentence (its numbers where they matter).
    fig : matplotlib Figure, optional
        The current pyplot figure when None. It is closed after it is shown.
    """
    from IPython.display import publish_display_data

    fig = plt.gcf() if fig is None else fig
    try:
        data, metadata = figure_bundle(fig, alt)
    finally:
        plt.close(fig)
    publish_display_data(data, metadata=metadata)
