"""A tiny GPT in numpy: embeddings, rotary attention blocks, unembedding, and its backward pass.

numpy only. For token ids of shape (B, n)::

    X = E[tokens]                                   # (B, n, d_model), token embedding
    X = X + MultiHead_rotary(LN_1(X)), causal       # each block, pre-norm (lesson 17)
    X = X + MLP(LN_2(X))
    logits = LN_f(X) @ W_U                          # (B, n, vocab), a score per next token

Position enters only through :func:`attnlib.apply_rotary` on each head's queries and keys
(lesson 14). The loss is the next-token cross-entropy; :func:`gpt_backward` carries its
gradient back through every step with the course's backward pieces: lesson 19's
attention backward, lesson 20's rule for ``Y = X W``, :func:`attnlib.block.mlp_backward`
and :func:`attnlib.block.layer_norm_backward`; a turn is undone by turning back.

Parameter names: ``E`` (vocab, d_model), then per block ``l`` (from 0) ``W_Q.l``, ``W_K.l``,
``W_V.l``, ``W_O.l`` (d_model, d_model), ``W_1.l`` (d_model, d_ff), ``b_1.l`` (d_ff,),
``W_2.l`` (d_ff, d_model), ``b_2.l``, ``gamma_1.l``, ``beta_1.l``, ``gamma_2.l``,
``beta_2.l`` (d_model,), then ``gamma_f``, ``beta_f`` (d_model,) and ``W_U`` (d_model, vocab).
"""

import numpy as np

from ._checks import whole_number
from .block import _gelu, _layer_norm, _layer_norm_backward, _mlp_backward, init_block
from .core import _attend, _exp_normalise
from .grad import _backward
from .heads import _merge, _split
from .rotary import _angles, _rotate

_EPS = 1e-5  # the layer norms' eps


def init_gpt(vocab, d_model, n_heads, n_layers, d_ff, rng, std=0.02):
    """The parameters of a tiny GPT, every one a named float64 array.

    Parameters
    ----------
    vocab : int
        How many different tokens there are.
    d_model, n_heads, n_layers, d_ff : int
        The width of a token row, heads per block (each of width d_model / n_heads,
        which must be even for rotary pairs), blocks, and the MLP's hidden width.
    rng : numpy.random.Generator
        Draws E, W_U and every block's matrices from a normal of spread ``std``.
    std : float

    Returns
    -------
    dict of str to ndarray
        Names as in the module's docstring; ``"n_heads"`` is stored too, as a 0-d array.

    Examples
    --------
    >>> params = init_gpt(5, 4, 2, 1, 8, np.random.default_rng(0))
    >>> params["E"].shape, params["W_Q.0"].shape, params["W_U"].shape
    ((5, 4), (4, 4), (4, 5))
    >>> sum(p.size for name, p in params.items() if name != "n_heads")  # 20 + 156 + 8 + 20
    204
    """
    where = "init_gpt"
    vocab, d_model = whole_number(vocab, "vocab", where), whole_number(d_model, "d_model", where)
    n_heads = whole_number(n_heads, "n_heads", where)
    n_layers = whole_number(n_layers, "n_layers", where)
    d_ff = whole_number(d_ff, "d_ff", where)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{where}: rng must be a numpy Generator (np.random.default_rng(0)), got "
            f"{type(rng).__name__}."
        )
    if d_model % n_heads or (d_model // n_heads) % 2:
        raise ValueError(
            f"{where}: d_model / n_heads must be a whole even number (rotary turns pairs of "
            f"columns), got d_model = {d_model} and n_heads = {n_heads}."
        )
    params = {"E": rng.normal(0.0, std, size=(vocab, d_model))}  # (vocab, d_model)
    for layer in range(n_layers):
        block = init_block(d_model, d_ff, rng=rng, std=std)
        params.update({f"{name}.{layer}": W for name, W in block.items()})
    params.update(gamma_f=np.ones(d_model), beta_f=np.zeros(d_model))
    params["W_U"] = rng.normal(0.0, std, size=(d_model, vocab))  # (d_model, vocab)
    params["n_heads"] = np.array(n_heads)
    return params


def _n_layers(params):
    return sum(1 for name in params if name.startswith("W_Q."))


def _check(params, tokens, where):
    """The token ids as an int array (B, n), checked against the parameters."""
    if not isinstance(params, dict) or "E" not in params or "n_heads" not in params:
        raise TypeError(f"{where}: params must be the dict init_gpt returns.")
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(
            f"{where}: tokens must be whole numbers of shape (B, n), one row per sequence, "
            f"got shape {tokens.shape} of {tokens.dtype}."
        )
    vocab = params["E"].shape[0]
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
        raise ValueError(
            f"{where}: every token must be from 0 to vocab - 1 = {vocab - 1}, got "
            f"{int(tokens.min())} to {int(tokens.max())}."
        )
    return tokens


def gpt_forward(params, tokens):
    """The next-token logits of every position, and what the backward pass needs.

    Parameters
    ----------
    params : dict
        From :func:`init_gpt`.
    tokens : array_like of int, shape (B, n)
        B sequences of n token ids.

    Returns
    -------
    logits : ndarray of shape (B, n, vocab)
        Row ``[b, i]`` scores every token as the one after position i; position i
        sees tokens 0 to i only (a causal mask).
    cache : dict
        The inputs of each step, for :func:`gpt_backward`; ``cache["weights"]`` is the
        list of each block's attention weights, shape (B, n_heads, n, n).

    Examples
    --------
    >>> params = init_gpt(5, 4, 2, 1, 8, np.random.default_rng(0))
    >>> logits, cache = gpt_forward(params, [[0, 3, 1], [4, 4, 2]])
    >>> logits.shape, cache["weights"][0].shape
    ((2, 3, 5), (2, 2, 3, 3))
    >>> cache["weights"][0][0, 0].round(2)  # causal: row 0 sees key 0 only
    array([[1.  , 0.  , 0.  ],
           [0.5 , 0.5 , 0.  ],
           [0.33, 0.33, 0.33]])
    """
    tokens = _check(params, tokens, "gpt_forward")
    return _forward(params, tokens)


def _forward(params, tokens):
    n_heads = int(params["n_heads"])
    n = tokens.shape[1]
    d_head = params["E"].shape[1] // n_heads
    angles = _angles(np.arange(n, dtype=float), d_head, 10000.0)  # (n, d_head / 2)
    cos, sin = np.cos(angles), np.sin(angles)
    allowed = np.tril(np.ones((n, n), dtype=bool))  # causal: query i sees keys j <= i
    X = params["E"][tokens]  # (B, n) -> (B, n, d_model), one row of E per token
    cache = {"tokens": tokens, "cos": cos, "sin": sin, "allowed": allowed, "blocks": []}
    cache["weights"] = []
    for layer in range(_n_layers(params)):
        p = {name[:-2]: W for name, W in params.items() if name.endswith(f".{layer}")}
        X_norm = _layer_norm(X, p["gamma_1"], p["beta_1"], _EPS)  # (B, n, d_model)
        Q = _rotate(_split(X_norm @ p["W_Q"], n_heads), cos, sin, "interleaved")  # (B, h, n, d)
        K = _rotate(_split(X_norm @ p["W_K"], n_heads), cos, sin, "interleaved")  # (B, h, n, d)
        V = _split(X_norm @ p["W_V"], n_heads)  # (B, h, n, d_head)
        heads, A = _attend(Q, K, V, allowed)  # (B, h, n, d_head), (B, h, n, n)
        M = _merge(heads)  # (B, h, n, d_head) -> (B, n, d_model)
        H = X + M @ p["W_O"]  # (B, n, d_model)
        H_norm = _layer_norm(H, p["gamma_2"], p["beta_2"], _EPS)  # (B, n, d_model)
        Z = H_norm @ p["W_1"] + p["b_1"]  # (B, n, d_ff)
        cache["blocks"].append(dict(X=X, X_norm=X_norm, Q=Q, K=K, V=V, M=M, H=H, H_norm=H_norm))
        cache["weights"].append(A)
        X = H + _gelu(Z) @ p["W_2"] + p["b_2"]  # (B, n, d_ff) @ (d_ff, d_model) -> (B, n, d_model)
    cache["X"] = X
    X_norm = _layer_norm(X, params["gamma_f"], params["beta_f"], _EPS)  # (B, n, d_model)
    cache["X_norm"] = X_norm
    return X_norm @ params["W_U"], cache  # (B, n, d_model) @ (d_model, vocab) -> (B, n, vocab)


def _softmax(logits):
    """softmax along the vocabulary, the course's own (attnlib.core), on a copy."""
    return _exp_normalise(logits.copy(), logits.max(axis=-1, keepdims=True))  # (B, n, vocab)


def _check_targets(logits, targets, scored, where):
    logits = np.asarray(logits, dtype=float)
    targets = np.asarray(targets)
    if logits.ndim != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(
            f"{where}: logits must have shape (B, n, vocab) and targets (B, n), got "
            f"{logits.shape} and {targets.shape}."
        )
    if not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(f"{where}: targets must be whole token ids, got {targets.dtype}.")
    if targets.size and (targets.min() < 0 or targets.max() >= logits.shape[-1]):
        raise ValueError(
            f"{where}: every target must be from 0 to vocab - 1 = {logits.shape[-1] - 1}, got "
            f"{int(targets.min())} to {int(targets.max())}."
        )
    scored = np.ones(targets.shape, bool) if scored is None else np.asarray(scored)
    if scored.shape != targets.shape or scored.dtype != bool:
        raise ValueError(
            f"{where}: scored must be True or False per target, shape {targets.shape}, got "
            f"shape {scored.shape} of {scored.dtype}."
        )
    if not scored.any():
        raise ValueError(f"{where}: scored is all False, so there is nothing to average.")
    return logits, targets, scored


def cross_entropy(logits, targets, scored=None):
    """The next-token loss: the mean of ``-log p(target)`` over the scored positions.

    ``p = softmax(logits)`` row by row turns each position's scores into probabilities
    of the next token; a confident right guess costs nearly 0, a spread-out guess over
    ``vocab`` tokens costs ``log(vocab)``.

    Parameters
    ----------
    logits : array_like of shape (B, n, vocab)
    targets : array_like of int, shape (B, n)
        The right next token at each position.
    scored : array_like of bool, shape (B, n), optional
        Which positions count; all when omitted.

    Returns
    -------
    float

    Examples
    --------
    Equal scores over 4 tokens give each probability 1/4: the loss is log 4.

    >>> round(cross_entropy(np.zeros((1, 2, 4)), [[1, 3]]), 4), round(float(np.log(4)), 4)
    (1.3863, 1.3863)
    """
    logits, targets, scored = _check_targets(logits, targets, scored, "cross_entropy")
    p = _softmax(logits)  # (B, n, vocab)
    p_target = np.take_along_axis(p, targets[..., None], axis=-1)[..., 0]  # (B, n)
    return float(-np.log(p_target[scored]).mean())


def cross_entropy_backward(logits, targets, scored=None):
    """The gradient of :func:`cross_entropy` with respect to the logits.

    ``(softmax(logits) - one_hot(target)) / N`` on each scored row, 0 elsewhere, with N
    the number of scored positions.

    Parameters
    ----------
    logits, targets, scored :
        As for :func:`cross_entropy`.

    Returns
    -------
    ndarray of shape (B, n, vocab)

    Examples
    --------
    >>> cross_entropy_backward(np.zeros((1, 1, 4)), [[1]])
    array([[[ 0.25, -0.75,  0.25,  0.25]]])
    """
    logits, targets, scored = _check_targets(logits, targets, scored, "cross_entropy_backward")
    dLogits = _softmax(logits)  # (B, n, vocab)
    np.put_along_axis(dLogits, targets[..., None], _take(dLogits, targets) - 1, axis=-1)
    return dLogits * scored[..., None] / scored.sum()  # (B, n, vocab) * (B, n, 1)


def _take(P, targets):
    return np.take_along_axis(P, targets[..., None], axis=-1)


def gpt_backward(params, cache, dLogits):
    """Gradients of a scalar loss with respect to every parameter, given ``dLogits``.

    Parameters
    ----------
    params : dict
        From :func:`init_gpt`.
    cache : dict
        From ``gpt_forward(params, tokens)``.
    dLogits : array_like of shape (B, n, vocab)
        The loss's gradient with respect to the logits, e.g. from
        :func:`cross_entropy_backward`.

    Returns
    -------
    dict of str to ndarray
        One gradient per parameter, with its name and shape (``n_heads`` has none).

    Examples
    --------
    Every gradient has its parameter's shape:

    >>> params = init_gpt(5, 4, 2, 1, 8, np.random.default_rng(0))
    >>> logits, cache = gpt_forward(params, [[0, 3, 1]])
    >>> grads = gpt_backward(params, cache, np.ones((1, 3, 5)))
    >>> all(grads[name].shape == params[name].shape for name in grads), len(grads)
    (True, 16)
    """
    where = "gpt_backward"
    if not isinstance(cache, dict) or "blocks" not in cache:
        raise TypeError(f"{where}: cache must be the dict gpt_forward returns.")
    dLogits = np.asarray(dLogits, dtype=float)
    want = (*cache["tokens"].shape, params["W_U"].shape[1])
    if dLogits.shape != want:
        raise ValueError(
            f"{where}: dLogits must have the logits' shape (B, n, vocab) = {want}, got "
            f"{dLogits.shape}."
        )
    return _gpt_backward(params, cache, dLogits)


def _flat(A):
    return A.reshape(-1, A.shape[-1])  # (B, n, d) -> (B n, d): every token one row


def _gpt_backward(params, cache, dLogits):
    n_heads = int(params["n_heads"])
    cos, sin, allowed = cache["cos"], cache["sin"], cache["allowed"]
    grads = {"W_U": _flat(cache["X_norm"]).T @ _flat(dLogits)}  # (d_model, B n) @ (B n, vocab)
    dX_norm = dLogits @ params["W_U"].T  # (B, n, vocab) @ (vocab, d_model) -> (B, n, d_model)
    dX, grads["gamma_f"], grads["beta_f"] = _layer_norm_backward(
        cache["X"], params["gamma_f"], dX_norm, _EPS
    )
    for layer in reversed(range(_n_layers(params))):
        p = {name[:-2]: W for name, W in params.items() if name.endswith(f".{layer}")}
        c = cache["blocks"][layer]
        g = {}
        # X_out = H + MLP(LN_2(H)): the residual passes dX to H unchanged, the MLP adds its part
        dH_norm, g["W_1"], g["b_1"], g["W_2"], g["b_2"] = _mlp_backward(
            c["H_norm"], p["W_1"], p["b_1"], p["W_2"], dX
        )
        dH_mlp, g["gamma_2"], g["beta_2"] = _layer_norm_backward(
            c["H"], p["gamma_2"], dH_norm, _EPS
        )
        dH = dX + dH_mlp  # (B, n, d_model), two paths into H
        # H = X + M W_O, then back through the heads (lesson 19), and each turn undone
        g["W_O"] = _flat(c["M"]).T @ _flat(dH)  # (d_model, B n) @ (B n, d_model)
        dM = _split(dH @ p["W_O"].T, n_heads)  # (B, n, d_model) -> (B, h, n, d_head)
        dQ, dK, dV = _backward(c["Q"], c["K"], c["V"], dM, allowed)  # (B, h, n, d_head) each
        dQ = _merge(_rotate(dQ, cos, -sin, "interleaved"))  # R(a)^T = R(-a): (B, n, d_model)
        dK = _merge(_rotate(dK, cos, -sin, "interleaved"))  # (B, n, d_model)
        dV = _merge(dV)  # (B, n, d_model)
        X_norm = _flat(c["X_norm"])  # (B n, d_model)
        g["W_Q"], g["W_K"], g["W_V"] = (X_norm.T @ _flat(dP) for dP in (dQ, dK, dV))
        dX_norm = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T  # three paths (lesson 20)
        dX_att, g["gamma_1"], g["beta_1"] = _layer_norm_backward(
            c["X"], p["gamma_1"], dX_norm, _EPS
        )
        dX = dH + dX_att  # (B, n, d_model): the residual and the attention branch
        grads.update({f"{name}.{layer}": G for name, G in g.items()})
    dE = np.zeros_like(params["E"])  # (vocab, d_model)
    np.add.at(dE, cache["tokens"], dX)  # a token used at several positions collects each share
    grads["E"] = dE
    return grads


def adam_step(params, grads, state, lr, beta_1=0.9, beta_2=0.99, eps=1e-8):
    """One step of Adam, written out: every parameter moves against its gradient.

    Adam keeps two running averages per entry, ``m`` of the gradient and ``v`` of its
    square, and moves each entry by ``lr * m_hat / (sqrt(v_hat) + eps)``, where the hats
    undo the averages' start at 0. So every entry moves about ``lr`` per step, however
    large or small its gradient. ``params`` and ``state`` are changed in place.

    Parameters
    ----------
    params, grads : dict of str to ndarray
        Matching names and shapes (``grads`` from :func:`gpt_backward`).
    state : dict
        Empty before the first step; the step keeps its averages there.
    lr : float
        The learning rate.
    beta_1, beta_2, eps : float

    Returns
    -------
    None

    Examples
    --------
    The first step moves each entry by lr against the sign of its gradient:

    >>> params, state = {"w": np.array([1.0, 1.0])}, {}
    >>> adam_step(params, {"w": np.array([0.5, -2.0])}, state, lr=0.1)
    >>> params["w"]
    array([0.9, 1.1])
    """
    if not isinstance(state, dict):
        raise TypeError(f"adam_step: state must be a dict (empty at first), got {state!r}.")
    t = state["t"] = state.get("t", 0) + 1
    for name, G in grads.items():
        m = state[f"m {name}"] = beta_1 * state.get(f"m {name}", 0.0) + (1 - beta_1) * G
        v = state[f"v {name}"] = beta_2 * state.get(f"v {name}", 0.0) + (1 - beta_2) * G**2
        m_hat, v_hat = m / (1 - beta_1**t), v / (1 - beta_2**t)  # undo the start at 0
        params[name] -= lr * m_hat / (np.sqrt(v_hat) + eps)


def induction_batch(rng, batch, vocab, half):
    """Sequences whose second half repeats the first, from a random place: the induction task.

    Each sequence is ``half`` different random tokens ``x_0 ... x_{half-1}``, then the same
    tokens again, turned round by a random shift s: ``x_s, x_{s+1}, ..., x_{half-1}, x_0,
    ..., x_{s-1}``. In the second half, the token after ``x_j`` is ``x_{j+1}``, the token
    that followed ``x_j``'s earlier occurrence (``... A B ... A`` -> B). The shift changes
    how far back that occurrence is, so no fixed offset finds it: the model must look for
    the earlier copy of the current token.

    Parameters
    ----------
    rng : numpy.random.Generator
    batch, vocab, half : int
        Sequences, tokens to draw from (at least ``half``), tokens per half.

    Returns
    -------
    tokens : ndarray of int, shape (batch, 2 half - 1)
        The model's input, every sequence but its last token.
    targets : ndarray of int, shape (batch, 2 half - 1)
        The next token at each position.
    scored : ndarray of bool, shape (batch, 2 half - 1)
        True where the next token can be known: in the second half, at every token but
        ``x_{half-1}``, which had no successor in the first half.

    Examples
    --------
    The whole sequence is 0 4 9 | 4 9 0 (shift 1). After 4 comes 9, as in the first half;
    after 9 comes 0, but the first half ended at 9, so that position is not scored:

    >>> tokens, targets, scored = induction_batch(np.random.default_rng(3), 1, 10, 3)
    >>> tokens, targets
    (array([[0, 4, 9, 4, 9]]), array([[4, 9, 4, 9, 0]]))
    >>> scored
    array([[False, False, False,  True, False]])
    """
    where = "induction_batch"
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{where}: rng must be a numpy Generator, got {type(rng).__name__}.")
    batch, vocab = whole_number(batch, "batch", where), whole_number(vocab, "vocab", where)
    half = whole_number(half, "half", where)
    if half > vocab:
        raise ValueError(
            f"{where}: half = {half} different tokens need vocab >= half, got vocab = {vocab}."
        )
    first = np.argsort(rng.random((batch, vocab)), axis=1)[:, :half]  # (batch, half), distinct
    shift = rng.integers(0, half, size=(batch, 1))  # (batch, 1), one shift per sequence
    j = (np.arange(half) + shift) % half  # (batch, half): which x_j stands at each place
    second = np.take_along_axis(first, j, axis=1)  # (batch, half)
    sequence = np.concatenate([first, second], axis=1)  # (batch, 2 half)
    scored = np.zeros((batch, 2 * half), bool)
    scored[:, half:] = j != half - 1  # x_{half-1}'s successor was never seen
    return sequence[:, :-1], sequence[:, 1:], scored[:, :-1]
