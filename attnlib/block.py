"""A pre-norm transformer block: layer norm, multi-head attention, residual, layer norm, MLP.

numpy only. For token rows X (..., n, d_model)::

    H = X + MultiHead(LayerNorm_1(X))      # tokens exchange information
    Y = H + MLP(LayerNorm_2(H))            # each token is transformed on its own

Shapes follow the course glossary, with d_ff the MLP's hidden width: W_Q and W_K
(d_model, h * d_k), W_V (d_model, h * d_v), W_O (h * d_v, d_model), W_1 (d_model, d_ff),
b_1 (d_ff,), W_2 (d_ff, d_model), b_2 (d_model,), gamma and beta (d_model,).
"""

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    as_mask,
    dtypes,
    finite_product,
    overflow_error,
    whole_number,
)
from .core import _attend
from .heads import _merge, _split, _width_per_head

# GELU in the tanh form GPT-2 uses: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), an
# approximation of the exact x Phi(x) (PyTorch's default) that differs from it by up to 4.7e-4
_GELU_C = np.sqrt(2 / np.pi)


def _matrix(W, name, rows, where):
    """A checked 2-D weight with ``rows`` rows (``None``: any number of rows)."""
    W = as_array(W, name, where, min_ndim=1)
    if W.ndim != 2:
        raise ValueError(f"{where}: {name} must be 2-D, got shape {W.shape}.")
    if rows is not None and W.shape[0] != rows[1]:
        raise ValueError(
            f"{where}: {name} must have {rows[1]} rows ({rows[0]}), got shape {W.shape}."
        )
    return W


def _vector(b, name, size, where):
    """A checked 1-D vector of ``size`` entries (``size`` is (what, number))."""
    b = as_array(b, name, where, min_ndim=1)
    if b.shape != (size[1],):
        raise ValueError(
            f"{where}: {name} must have shape ({size[1]},), one entry per {size[0]}, got {b.shape}."
        )
    return b


def _eps(eps, where):
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.floating)):
        raise TypeError(f"{where}: eps must be a number, got {eps!r}.")
    if not eps >= 0:  # also refuses nan
        raise ValueError(f"{where}: eps must be 0 or more, got {eps}.")
    return float(eps)


def _layer_norm(X, gamma, beta, eps):
    """layer_norm of checked inputs."""
    mean = X.mean(axis=-1, keepdims=True)  # (n, 1): each token's own mean
    var = ((X - mean) ** 2).mean(axis=-1, keepdims=True)  # (n, 1), divided by d_model
    X_hat = (X - mean) / np.sqrt(var + eps)  # (n, d_model): mean 0, variance 1 per row
    return gamma * X_hat + beta  # (d_model,) * (n, d_model) + (d_model,)


def layer_norm(X, gamma=None, beta=None, eps=1e-5):
    """Normalise each token row to mean 0 and variance 1, then scale and shift it.

    ``gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta`` for every row ``x`` of X,
    where ``var`` divides by ``d_model`` (not ``d_model - 1``), as PyTorch and TensorFlow do.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
        One row per token (a single row of shape (d_model,) is fine too).
    gamma : array_like of shape (d_model,), optional
        The learned scale of each column; ones when omitted.
    beta : array_like of shape (d_model,), optional
        The learned shift of each column; zeros when omitted.
    eps : float
        Added to the variance so a row of equal entries does not divide by 0.

    Returns
    -------
    ndarray of the shape of X
        float32 for float32 inputs, float16 for float16 (computed in float32),
        float64 for integers, bools and lists.

    Examples
    --------
    The row (1, 5, 3, 3) has mean 3 and variance (4 + 4 + 0 + 0) / 4 = 2:

    >>> layer_norm([[1, 5, 3, 3]], eps=0) * np.sqrt(2)
    array([[-2.,  2.,  0.,  0.]])
    >>> layer_norm([[1, 5, 3, 3]], gamma=[1, 1, 1, 1], beta=[0, 0, 0, 10], eps=0)[0, 3]
    np.float64(10.0)
    """
    where = "layer_norm"
    X = as_array(X, "X", where, min_ndim=1)
    d_model = ("column of X", X.shape[-1])
    gamma = np.ones(1, X.dtype) if gamma is None else _vector(gamma, "gamma", d_model, where)
    beta = np.zeros(1, X.dtype) if beta is None else _vector(beta, "beta", d_model, where)
    eps = _eps(eps, where)
    if eps == 0:
        flat = np.ptp(X, axis=-1) == 0  # rows whose entries are all equal: variance 0
        if flat.any():
            row = [int(i) for i in np.argwhere(np.atleast_1d(flat))[0]]
            raise ValueError(
                f"{where}: row {row} of X has variance 0 (all its entries are equal), so "
                "eps=0 would divide by 0; use eps > 0 (1e-5 is usual)."
            )
    work, out = dtypes(X, gamma, beta)
    X, gamma, beta = (A.astype(work, copy=False) for A in (X, gamma, beta))
    return _layer_norm(X, gamma, beta, eps).astype(out, copy=False)


def _gelu(Z):
    # z * z * z, not z**3: numpy's pow is about 15 times slower
    with np.errstate(over="ignore"):  # z^3 may overflow to +-inf, where tanh is +-1 anyway
        return 0.5 * Z * (1 + np.tanh(_GELU_C * (Z + 0.044715 * Z * Z * Z)))


def _mlp(X, W_1, b_1, W_2, b_2):
    """mlp of checked inputs."""
    H = _gelu(X @ W_1 + b_1)  # (n, d_model) @ (d_model, d_ff) -> (n, d_ff)
    return H @ W_2 + b_2  # (n, d_ff) @ (d_ff, d_model) -> (n, d_model)


def _check_mlp(X, W_1, b_1, W_2, b_2, where, residual=True):
    d_model = X.shape[-1]
    W_1 = _matrix(W_1, "W_1", ("d_model, the columns of the input", d_model), where)
    d_ff = W_1.shape[1]
    b_1 = _vector(b_1, "b_1", ("column of W_1 (d_ff)", d_ff), where)
    W_2 = _matrix(W_2, "W_2", ("d_ff, the columns of W_1", d_ff), where)
    if residual and W_2.shape[1] != d_model:
        raise ValueError(
            f"{where}: W_2 must have {d_model} columns (d_model: the MLP's output is added "
            f"back to the token rows), got shape {W_2.shape}."
        )
    b_2 = _vector(b_2, "b_2", ("column of W_2", W_2.shape[1]), where)
    return W_1, b_1, W_2, b_2


def mlp(X, W_1, b_1, W_2, b_2):
    """The position-wise MLP: ``GELU(X W_1 + b_1) W_2 + b_2``, each token on its own.

    GELU is the smooth ReLU ``z Phi(z)`` (Phi: the normal distribution's cumulative
    share). This function computes the tanh approximation GPT-2 uses,
    ``0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))``, as PyTorch's
    ``nn.GELU(approximate="tanh")`` does; it differs from the exact GELU (PyTorch's
    default ``nn.GELU()``) by up to 4.7e-4. Both keep large positive entries, send large
    negative ones to 0, and have ``GELU(z) - GELU(-z) = z``.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
    W_1 : array_like of shape (d_model, d_ff)
    b_1 : array_like of shape (d_ff,)
    W_2 : array_like of shape (d_ff, d_out)
        d_out = d_model inside a transformer block, where the output is added to X.
    b_2 : array_like of shape (d_out,)

    Returns
    -------
    ndarray of shape (..., n, d_out)
        Row ``i`` depends on row ``i`` of X only. float32 when every input is
        float32, float64 for integers, bools, lists or any float64 input.

    Examples
    --------
    The hidden row is (1, -1); W_2 takes GELU(1) - GELU(-1), which is exactly 1:

    >>> mlp([[1, 0]], W_1=[[1, -1], [0, 0]], b_1=[0, 0], W_2=[[1], [-1]], b_2=[0.5])
    array([[1.5]])
    """
    where = "mlp"
    X = as_array(X, "X", where, min_ndim=1)
    W_1, b_1, W_2, b_2 = _check_mlp(X, W_1, b_1, W_2, b_2, where, residual=False)
    work, out = dtypes(X, W_1, b_1, W_2, b_2)
    arrays = (A.astype(work, copy=False) for A in (X, W_1, b_1, W_2, b_2))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is named just below
        Y = _mlp(*arrays)
    return finite_product(Y, "the MLP's output", where).astype(out, copy=False)


def transformer_block(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    W_1,
    b_1,
    W_2,
    b_2,
    n_heads,
    gamma_1=None,
    beta_1=None,
    gamma_2=None,
    beta_2=None,
    eps=1e-5,
    mask=None,
):
    """A pre-norm transformer block, GPT-2's layout, on token rows X.

    ``H = X + MultiHead(LayerNorm_1(X))``, then ``Y = H + MLP(LayerNorm_2(H))``. The
    attention is :func:`attnlib.multi_head_attention` (self-attention, no biases), the
    MLP is :func:`mlp`, the layer norms are :func:`layer_norm`.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
    W_Q, W_K : array_like of shape (d_model, n_heads * d_k)
    W_V : array_like of shape (d_model, n_heads * d_v)
    W_O : array_like of shape (n_heads * d_v, d_model)
        Its output is added to X, so it must have d_model columns.
    W_1, b_1, W_2, b_2 : array_like
        The MLP's weights, shapes (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,).
    n_heads : int
    gamma_1, beta_1, gamma_2, beta_2 : array_like of shape (d_model,), optional
        The two layer norms' scales (ones when omitted) and shifts (zeros).
    eps : float
        The layer norms' eps.
    mask : array_like of bool, broadcastable to (..., n_heads, n, n), optional
        ``True`` where query i may attend to key j, e.g. :func:`attnlib.causal_mask`.

    Returns
    -------
    output : ndarray of shape (..., n, d_model)
    weights : ndarray of shape (..., n_heads, n, n)
        Each head's attention weights. Both float32 when every input is float32,
        float64 for integers, bools, lists or any float64 input.

    Examples
    --------
    With W_O and W_2 and b_2 all zero, both branches add nothing: the block is the
    identity, whatever the other weights are.

    >>> X = [[1, 0, 2, 0], [0, 2, 0, 1]]
    >>> I, Z = np.eye(4), np.zeros((4, 4))
    >>> output, weights = transformer_block(X, I, I, I, Z, I, [0] * 4, Z, [0] * 4, n_heads=2)
    >>> output
    array([[1., 0., 2., 0.],
           [0., 2., 0., 1.]])
    >>> weights.shape
    (2, 2, 2)
    """
    where = "transformer_block"
    n_heads = whole_number(n_heads, "n_heads", where)
    X = as_array(X, "X", where)
    d_model = X.shape[-1]
    rows = ("d_model, the columns of X", d_model)
    W_Q, W_K, W_V = (
        _matrix(W, name, rows, where) for W, name in ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"))
    )
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(
            f"{where}: W_Q and W_K must have the same number of columns (n_heads * d_k), "
            f"but W_Q has {W_Q.shape[1]} and W_K has {W_K.shape[1]}."
        )
    _width_per_head(W_Q.shape[1], n_heads, "W_Q", where)
    _width_per_head(W_V.shape[1], n_heads, "W_V", where)
    W_O = _matrix(W_O, "W_O", ("n_heads * d_v, the columns of W_V", W_V.shape[1]), where)
    if W_O.shape[1] != d_model:
        raise ValueError(
            f"{where}: W_O must have {d_model} columns (d_model: the heads' output is added "
            f"back to X), got shape {W_O.shape}."
        )
    W_1, b_1, W_2, b_2 = _check_mlp(X, W_1, b_1, W_2, b_2, where)
    size = ("column of X", d_model)
    gamma_1, gamma_2 = (
        np.ones(1, X.dtype) if g is None else _vector(g, name, size, where)
        for g, name in ((gamma_1, "gamma_1"), (gamma_2, "gamma_2"))
    )
    beta_1, beta_2 = (
        np.zeros(1, X.dtype) if b is None else _vector(b, name, size, where)
        for b, name in ((beta_1, "beta_1"), (beta_2, "beta_2"))
    )
    eps = _eps(eps, where)
    n = X.shape[-2]
    allowed = None
    if mask is not None:
        allowed = as_mask(mask, (*X.shape[:-2], n_heads, n, n), where)

    arrays = (X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, gamma_1, beta_1, gamma_2, beta_2)
    work, out = dtypes(*arrays)
    X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, gamma_1, beta_1, gamma_2, beta_2 = (
        A.astype(work, copy=False) for A in arrays
    )
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is named below
        X_norm = _layer_norm(X, gamma_1, beta_1, eps)  # (n, d_model)
        Q = _split(X_norm @ W_Q, n_heads)  # (n, d_model) @ (d_model, h * d_k) -> (h, n, d_k)
        K = _split(X_norm @ W_K, n_heads)  # (h, n, d_k)
        V = _split(X_norm @ W_V, n_heads)  # (h, n, d_v)
        try:
            heads, weights = _attend(Q, K, V, allowed)  # (h, n, d_v), (h, n, n)
        except ScoresOverflow:
            raise overflow_error(where, Q, K, work, names="X, W_Q or W_K") from None
        H = X + _merge(heads) @ W_O  # (n, h * d_v) @ (h * d_v, d_model) -> (n, d_model)
        output = H + _mlp(_layer_norm(H, gamma_2, beta_2, eps), W_1, b_1, W_2, b_2)  # (n, d_model)
    output = finite_product(output, "the block's output", where)
    return output.astype(out, copy=False), weights.astype(out, copy=False)


def init_block(d_model, d_ff, rng=None, std=0.02):
    """The parameters of one block, as keyword arguments for :func:`transformer_block`.

    Parameters
    ----------
    d_model, d_ff : int
        The width of a token row and of the MLP's hidden layer.
    rng : numpy.random.Generator, optional
        Draws every weight matrix from a normal distribution of spread ``std``, as
        GPT-2 is initialised. Without it the matrices are zero and the block is the
        identity. Biases start at 0, gamma at 1 and beta at 0 either way.
    std : float

    Returns
    -------
    dict of str to ndarray
        W_Q, W_K, W_V, W_O (d_model, d_model), W_1 (d_model, d_ff), b_1 (d_ff,),
        W_2 (d_ff, d_model), b_2, gamma_1, beta_1, gamma_2, beta_2 (d_model,).

    Examples
    --------
    >>> params = init_block(4, 16)
    >>> sum(p.size for p in params.values())  # 4 * 4^2 + 2 * 4 * 16 + 16 + 5 * 4 = 64 + 128 + 36
    228
    """
    where = "init_block"
    d_model = whole_number(d_model, "d_model", where)
    d_ff = whole_number(d_ff, "d_ff", where)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{where}: rng must be a numpy Generator (np.random.default_rng(0)), got "
            f"{type(rng).__name__}."
        )
    shapes = {
        "W_Q": (d_model, d_model),
        "W_K": (d_model, d_model),
        "W_V": (d_model, d_model),
        "W_O": (d_model, d_model),
        "W_1": (d_model, d_ff),
        "W_2": (d_ff, d_model),
    }
    params = {
        name: np.zeros(shape) if rng is None else rng.normal(0.0, std, size=shape)
        for name, shape in shapes.items()
    }
    params.update(b_1=np.zeros(d_ff), b_2=np.zeros(d_model))
    params.update(gamma_1=np.ones(d_model), beta_1=np.zeros(d_model))
    params.update(gamma_2=np.ones(d_model), beta_2=np.zeros(d_model))
    return params


def _layer_norm_backward(X, gamma, dY, eps):
    """layer_norm_backward of checked inputs: (dX, dgamma, dbeta), summed over leading axes."""
    d_model = X.shape[-1]
    mean = X.mean(axis=-1, keepdims=True)  # (n, 1)
    sigma = np.sqrt(((X - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # (n, 1)
    X_hat = (X - mean) / sigma  # (n, d_model)
    dX_hat = dY * gamma  # (n, d_model) * (d_model,)
    # x_hat's entries share the row's mean and sigma, so each entry's gradient loses the
    # row's average gradient and the part along x_hat (which would change sigma)
    along = (dX_hat * X_hat).sum(axis=-1, keepdims=True) / d_model  # (n, 1)
    dX = (dX_hat - dX_hat.mean(axis=-1, keepdims=True) - X_hat * along) / sigma  # (n, d_model)
    rows = tuple(range(X.ndim - 1))  # every axis but the last: gamma is shared by all rows
    return dX, (dY * X_hat).sum(axis=rows), dY.sum(axis=rows)


def layer_norm_backward(X, dY, gamma=None, eps=1e-5):
    """Gradients of :func:`layer_norm` with respect to X, gamma and beta, given ``dY``.

    With ``x_hat = (x - mean(x)) / sigma`` and ``g = dY * gamma`` for one row,
    ``dX = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma``: a gradient that would only
    shift the row, or only stretch it, is removed, since layer norm undoes both.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
        The layer norm's input.
    dY : array_like of the shape of X
        The gradient of a scalar loss with respect to ``layer_norm(X, gamma, beta, eps)``.
    gamma : array_like of shape (d_model,), optional
        Ones when omitted. beta is not needed: it only shifts the output.
    eps : float

    Returns
    -------
    dX : ndarray of the shape of X
    dgamma, dbeta : ndarray of shape (d_model,)
        Summed over every row. float32 when every input is float32, else float64.

    Examples
    --------
    A gradient of equal entries would shift the row, which layer norm undoes: dX is 0.
    dbeta is dY summed over the rows:

    >>> dX, dgamma, dbeta = layer_norm_backward([[1, 5, 3, 3]], [[2, 2, 2, 2]], eps=0)
    >>> dX + 0.0, dbeta
    (array([[0., 0., 0., 0.]]), array([2., 2., 2., 2.]))
    """
    where = "layer_norm_backward"
    X = as_array(X, "X", where, min_ndim=1)
    dY = as_array(dY, "dY", where, min_ndim=1)
    if dY.shape != X.shape:
        raise ValueError(f"{where}: dY must have the shape of X, {X.shape}, got {dY.shape}.")
    d_model = ("column of X", X.shape[-1])
    gamma = np.ones(X.shape[-1]) if gamma is None else _vector(gamma, "gamma", d_model, where)
    eps = _eps(eps, where)
    work, out = dtypes(X, dY, gamma)
    X, dY, gamma = (A.astype(work, copy=False) for A in (X, dY, gamma))
    return tuple(g.astype(out, copy=False) for g in _layer_norm_backward(X, gamma, dY, eps))


def _gelu_slope(Z):
    """d GELU(z) / dz of the tanh form, entry by entry."""
    with np.errstate(over="ignore"):
        inner = _GELU_C * (Z + 0.044715 * Z * Z * Z)
        t = np.tanh(inner)
    return 0.5 * (1 + t) + 0.5 * Z * (1 - t**2) * _GELU_C * (1 + 3 * 0.044715 * Z * Z)


def _mlp_backward(X, W_1, b_1, W_2, dY):
    """mlp_backward of checked inputs: (dX, dW_1, db_1, dW_2, db_2), summed over leading axes."""
    Z = X @ W_1 + b_1  # (n, d_model) @ (d_model, d_ff) -> (n, d_ff)
    H = _gelu(Z)  # (n, d_ff)
    rows = tuple(range(X.ndim - 1))  # the weights are shared by every row
    flat = X.shape[-1], dY.shape[-1]
    dW_2 = H.reshape(-1, H.shape[-1]).T @ dY.reshape(-1, flat[1])  # (d_ff, N) @ (N, d_out)
    dH = dY @ W_2.T  # (n, d_out) @ (d_out, d_ff) -> (n, d_ff)
    dZ = dH * _gelu_slope(Z)  # (n, d_ff), through GELU entry by entry
    dW_1 = X.reshape(-1, flat[0]).T @ dZ.reshape(-1, dZ.shape[-1])  # (d_model, N) @ (N, d_ff)
    dX = dZ @ W_1.T  # (n, d_ff) @ (d_ff, d_model) -> (n, d_model)
    return dX, dW_1, dZ.sum(axis=rows), dW_2, dY.sum(axis=rows)


def mlp_backward(X, W_1, b_1, W_2, b_2, dY):
    """Gradients of :func:`mlp` with respect to X and every weight, given ``dY``.

    With ``Z = X W_1 + b_1``: ``dW_2 = GELU(Z)^T dY``, ``db_2`` sums dY's rows,
    ``dZ = (dY W_2^T) * GELU'(Z)`` entry by entry, ``dW_1 = X^T dZ``, ``db_1`` sums
    dZ's rows and ``dX = dZ W_1^T``: lesson 17's rule for ``Y = X W``, twice.

    Parameters
    ----------
    X, W_1, b_1, W_2, b_2 : array_like
        The inputs of :func:`mlp`, shapes (..., n, d_model), (d_model, d_ff), (d_ff,),
        (d_ff, d_out), (d_out,).
    dY : array_like of shape (..., n, d_out)
        The gradient of a scalar loss with respect to ``mlp(X, W_1, b_1, W_2, b_2)``.

    Returns
    -------
    dX : ndarray of shape (..., n, d_model)
    dW_1, db_1, dW_2, db_2 : ndarray
        The shapes of W_1, b_1, W_2, b_2, summed over every row. float32 when every
        input is float32, else float64.

    Examples
    --------
    One token, one hidden unit: GELU(0) has slope 1/2, so dX = dY * W_2 * 1/2 * W_1:

    >>> dX, dW_1, db_1, dW_2, db_2 = mlp_backward([[0]], [[2]], [0], [[3]], [0], [[1]])
    >>> dX, db_1, dW_2 + 0.0
    (array([[3.]]), array([1.5]), array([[0.]]))
    """
    where = "mlp_backward"
    X = as_array(X, "X", where, min_ndim=1)
    W_1, b_1, W_2, b_2 = _check_mlp(X, W_1, b_1, W_2, b_2, where, residual=False)
    dY = as_array(dY, "dY", where, min_ndim=1)
    want = (*X.shape[:-1], W_2.shape[1])
    if dY.shape != want:
        raise ValueError(
            f"{where}: dY must have the output's shape (..., n, d_out) = {want}, got {dY.shape}."
        )
    work, out = dtypes(X, W_1, b_1, W_2, b_2, dY)
    X, W_1, b_1, W_2, dY = (A.astype(work, copy=False) for A in (X, W_1, b_1, W_2, dY))
    with np.errstate(over="ignore", invalid="ignore"):
        grads = _mlp_backward(X, W_1, b_1, W_2, dY)
    return tuple(g.astype(out, copy=False) for g in grads)
