import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Arc  # noqa: E402

from attnlib import example, plot  # noqa: E402

Q, K = example.DOCUMENT["Q"].values, example.DOCUMENT["K"].values


def labels(ax):
    return [t.get_text() for t in ax.texts if t.get_text()]


def test_each_key_is_labelled_with_its_angle_and_score():
    ax = plot.alignment(Q[0], K, "birds", example.TOKENS)
    assert labels(ax) == [
        "q: birds",
        "k: birds  76°, q·k = 3",
        "k: eat  13°, q·k = 9",
        "k: seeds  49°, q·k = 6",
    ]
    plt.close(ax.figure)


def test_one_arc_per_key_spanning_the_angle_between_query_and_key():
    ax = plot.alignment(Q[0], K, "birds", example.TOKENS)
    arcs = [p for p in ax.patches if isinstance(p, Arc)]
    assert len(arcs) == 3
    q_angle = np.degrees(np.arctan2(Q[0, 1], Q[0, 0]))
    for arc, k in zip(arcs, K, strict=True):
        k_angle = np.degrees(np.arctan2(k[1], k[0]))
        assert sorted([arc.theta1, arc.theta2]) == pytest.approx(sorted([q_angle, k_angle]))
    plt.close(ax.figure)


def test_arc_takes_the_short_way_round_across_the_negative_x_axis():
    q, k = np.array([-1.0, 0.1]), np.array([-1.0, -0.1])  # about 174° and -174°: 11° apart
    ax = plot.alignment(q, k[None, :], "a", ["b"])
    (arc,) = [p for p in ax.patches if isinstance(p, Arc)]
    assert arc.theta2 - arc.theta1 == pytest.approx(11.42, abs=0.01)
    ends = sorted([arc.theta1 % 360, arc.theta2 % 360])
    assert ends == pytest.approx(sorted(np.degrees(np.arctan2([0.1, -0.1], -1.0)) % 360))
    assert labels(ax)[1].startswith("k: b  11°")
    plt.close(ax.figure)


def test_labels_at_the_same_point_do_not_overlap():
    # eat's query (2, 1) is exactly seeds' key (2, 1)
    ax = plot.alignment(Q[1], K, "eat", example.TOKENS)
    at = {t.get_text(): t.xyann for t in ax.texts if t.get_text()}
    assert at["q: eat"] != at["k: seeds  0°, q·k = 5"]
    plt.close(ax.figure)


def test_a_zero_key_gets_a_score_but_no_angle():
    ax = plot.alignment(Q[0], np.array([[0.0, 0.0], [1.0, 2.0]]), "birds", ["zero", "eat"])
    assert labels(ax)[1] == "k: zero  q·k = 0"
    assert len([p for p in ax.patches if isinstance(p, Arc)]) == 1
    plt.close(ax.figure)


def test_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    assert plot.alignment(Q[0], K, "birds", example.TOKENS, ax=right) is right
    assert not left.texts
    plt.close(fig)


@pytest.mark.parametrize(
    "q, K_, k_labels, message",
    [
        (Q[:1], K, example.TOKENS, r"^alignment: q must have shape \(2,\) .*got \(1, 2\)\.$"),
        (Q[0], K[:, :1], example.TOKENS, r"^alignment: K must have shape \(n_k, 2\) .*\(3, 1\)\.$"),
        (Q[0], K, example.TOKENS[:2], r"^alignment: K has 3 rows but there are 2 key labels\.$"),
    ],
)
def test_refuses_what_it_cannot_draw(q, K_, k_labels, message):
    with pytest.raises(ValueError, match=message):
        plot.alignment(q, K_, "birds", k_labels)
