"""A slow reference written the way the lessons write it: explicit loops, no vectorising."""

import math


def attention_loop(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V for 2-D nested lists, one query at a time."""
    n_q, n_k, d_k, d_v = len(Q), len(K), len(Q[0]), len(V[0])
    output, weights = [], []
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            if mask is not None and not mask[i][j]:
                scores.append(-math.inf)
                continue
            s = sum(Q[i][t] * K[j][t] for t in range(d_k))
            scores.append(s / math.sqrt(d_k))
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        total = sum(e)
        w = [x / total for x in e]
        weights.append(w)
        output.append([sum(w[j] * V[j][c] for j in range(n_k)) for c in range(d_v)])
    return output, weights
