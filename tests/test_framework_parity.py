"""attnlib.attention against PyTorch's scaled_dot_product_attention (lesson 24's comparison).

Runs only where torch is installed (the course never requires it; install it into a
separate environment). Layout (batch, heads, n, d) with unequal sizes; masks in each form
SDPA takes; tolerances per dtype as lesson 24 derives them, gamma_n = n u / (1 - n u) with
n = d_k + n_k.
"""

import numpy as np
import pytest

from attnlib import attention, causal_mask, padding_mask

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the framework comparison is optional"
)
F = torch.nn.functional

B, H, N_Q, N_K, D_K, D_V = 2, 3, 3, 5, 4, 2
MANTISSA_BITS = {np.float64: 52, np.float32: 23, np.float16: 10}


def tolerance(dtype):
    n_u = (D_K + N_K) * 2.0 ** -(MANTISSA_BITS[dtype] + 1)
    return n_u / (1 - n_u)


@pytest.fixture
def qkv():
    rng = np.random.default_rng(18)
    return tuple(rng.normal(size=(B, H, n, d)) for n, d in ((N_Q, D_K), (N_K, D_K), (N_K, D_V)))


def sdpa(Q, K, V, **kwargs):
    tensors = {
        k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    return F.scaled_dot_product_attention(
        *map(torch.from_numpy, (Q, K, V)), dropout_p=0.0, **tensors
    ).numpy()


PADDING = padding_mask([5, 3], n_k=N_K)[:, None]  # (B, 1, 1, n_k)
TOP_LEFT = causal_mask(N_Q, N_K)
BOTTOM_RIGHT = causal_mask(N_Q, N_K, align="bottom_right")
CASES = {  # name: (attnlib's mask, SDPA's keyword arguments)
    "no mask": (None, {}),
    "padding, boolean": (PADDING, {"attn_mask": PADDING}),
    "padding, additive": (PADDING, {"attn_mask": np.where(PADDING, 0.0, -np.inf)}),
    "is_causal is top-left": (TOP_LEFT, {"is_causal": True}),
    "bottom-right as attn_mask": (BOTTOM_RIGHT, {"attn_mask": BOTTOM_RIGHT}),
    "padding and causal": (PADDING & TOP_LEFT, {"attn_mask": PADDING & TOP_LEFT}),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("case", list(CASES))
def test_attention_matches_sdpa(qkv, case, dtype):
    mask, kwargs = CASES[case]
    if "attn_mask" in kwargs and kwargs["attn_mask"].dtype != bool:
        kwargs = {"attn_mask": kwargs["attn_mask"].astype(dtype)}  # SDPA: the queries' dtype
    Q, K, V = (M.astype(dtype) for M in qkv)
    ours, _ = attention(Q, K, V, mask=mask)
    theirs = sdpa(Q, K, V, **kwargs)
    assert ours.dtype == theirs.dtype == dtype
    np.testing.assert_allclose(ours, theirs, rtol=tolerance(dtype), atol=tolerance(dtype))


@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_sdpa_scale_is_attnlib_with_scaled_queries(qkv, scale):
    Q, K, V = qkv
    ours, _ = attention(Q * (scale * np.sqrt(D_K)), K, V)
    np.testing.assert_allclose(ours, sdpa(Q, K, V, scale=scale), rtol=1e-12, atol=1e-15)


def test_is_causal_is_not_bottom_right(qkv):
    # the alignments differ when n_q != n_k: a comparison must pick the right one
    Q, K, V = qkv
    ours, _ = attention(Q, K, V, mask=BOTTOM_RIGHT)
    assert not np.allclose(ours, sdpa(Q, K, V, is_causal=True))


def test_lesson_24_stores_the_same_verdict_with_torch():
    # without torch, nbval compares lesson 24's stored outputs; with torch, the comparison cell
    # runs for real and must print exactly the stored line (its details cell is not compared)
    import json
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = (
        Path(__file__).resolve().parent.parent / "notebooks/24_checking_against_a_framework.ipynb"
    )
    stored = json.loads(path.read_text())["cells"]
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    verdict = [
        i for i, c in enumerate(stored) if "compare_with_torch(CASES)" in "".join(c["source"])
    ]
    assert len(verdict) == 1
    assert nb.cells[verdict[0]].outputs[0]["text"] == "".join(
        stored[verdict[0]]["outputs"][0]["text"]
    )
    details = nb.cells[verdict[0] + 1]
    assert details.metadata["tags"] == ["nbval-ignore-output"]
    assert details.outputs[0]["text"].startswith(f"torch {torch.__version__}")


# ---- rotary positions (lesson 14): the two ways model code writes RoPE in torch ----------
def torch_rope_half(x, positions, base=10000.0):
    """GPT-NeoX / Hugging Face Llama style: cos and sin repeated over both halves, and
    rotate_half(x) = cat(-x2, x1)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))  # (d / 2,)
    freqs = torch.outer(positions.to(torch.float64), inv_freq)  # (n, d / 2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (n, d)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def torch_rope_interleaved(x, positions, base=10000.0):
    """Meta's Llama reference style: neighbouring columns as one complex number, times
    the unit complex numbers e^(i p theta)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs_cis = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                            torch.outer(positions.to(torch.float64), inv_freq))  # fmt: skip
    x_c = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2))
    return torch.view_as_real(x_c * freqs_cis).flatten(-2).to(x.dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "layout, reference", [("half", torch_rope_half), ("interleaved", torch_rope_interleaved)]
)
def test_apply_rotary_matches_torch(layout, reference, dtype):
    from attnlib import apply_rotary

    rng = np.random.default_rng(20)
    X = rng.normal(size=(B, H, N_K, 6)).astype(dtype)  # (batch, heads, n, d), d = 6
    positions = np.array([3, 0, 17, 4, 1000])
    want = reference(torch.from_numpy(X), torch.from_numpy(positions)).numpy()
    got = apply_rotary(X, positions, layout=layout)
    assert got.dtype == want.dtype == dtype
    tol = {np.float64: 1e-12, np.float32: 1e-5}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---- FlashAttention (lesson 29): torch's autograd through SDPA gives the same gradients ----
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_backward_matches_torch_autograd(causal):
    from attnlib import flash_attention, flash_attention_backward

    rng = np.random.default_rng(93)
    Q, K, V = (rng.normal(size=(B, H, n, d)) for n, d in ((7, D_K), (11, D_K), (11, D_V)))
    dOutput = rng.normal(size=(B, H, 7, D_V))
    tensors = [torch.from_numpy(A).requires_grad_() for A in (Q, K, V)]
    out = F.scaled_dot_product_attention(*tensors, is_causal=causal)  # top-left, as attnlib
    out.backward(torch.from_numpy(dOutput))
    output, L = flash_attention(Q, K, V, block_size=3, query_block_size=4, causal=causal)
    np.testing.assert_allclose(output, out.detach().numpy(), rtol=0, atol=1e-12)
    grads = flash_attention_backward(
        Q, K, V, output, L, dOutput, block_size=3, query_block_size=4, causal=causal
    )
    for got, tensor in zip(grads, tensors, strict=True):
        np.testing.assert_allclose(got, tensor.grad.numpy(), rtol=0, atol=1e-10)


# ---- grouped-query attention: SDPA's enable_gqa -------------------------------------------------
@pytest.mark.parametrize("n_kv", [1, 2, 6])
@pytest.mark.parametrize("masked", [False, True])
def test_grouped_query_attention_matches_sdpa_enable_gqa(n_kv, masked):
    from attnlib import merge_heads, multi_head_attention, split_heads

    rng = np.random.default_rng(17 + n_kv)
    n_heads, d_model, d_kv, d_out = 6, 5, 7, 3
    X_q, X_kv = rng.normal(size=(N_Q, d_model)), rng.normal(size=(N_K, d_kv))
    W_Q, W_K = rng.normal(size=(d_model, n_heads * D_K)), rng.normal(size=(d_kv, n_kv * D_K))
    W_V, W_O = rng.normal(size=(d_kv, n_kv * D_V)), rng.normal(size=(n_heads * D_V, d_out))
    mask = BOTTOM_RIGHT if masked else None
    got, _ = multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask, n_kv_heads=n_kv)
    Q = split_heads(X_q @ W_Q, n_heads)  # (h, n_q, d_k)
    K, V = split_heads(X_kv @ W_K, n_kv), split_heads(X_kv @ W_V, n_kv)  # (h_kv, n_k, d)
    kwargs = {"attn_mask": mask} if masked else {}
    heads = sdpa(Q, K, V, enable_gqa=True, **kwargs)  # (h, n_q, d_v)
    np.testing.assert_allclose(got, merge_heads(heads) @ W_O, rtol=1e-12, atol=1e-12)


def test_lesson_26_stores_the_same_verdict_with_torch():
    # with torch the enable_gqa cell of lesson 26 runs for real and must print its stored lines
    import json
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parent.parent / "notebooks/26_grouped_query_attention.ipynb"
    stored = json.loads(path.read_text())["cells"]
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    verdict = [
        i
        for i, c in enumerate(stored)
        if c["cell_type"] == "code" and "enable_gqa=True" in "".join(c["source"])
    ]
    assert len(verdict) == 1
    assert nb.cells[verdict[0]].outputs[0]["text"] == "".join(
        stored[verdict[0]]["outputs"][0]["text"]
    )
    details = nb.cells[verdict[0] + 1]
    assert details.metadata["tags"] == ["nbval-ignore-output"]
    assert details.outputs[0]["text"].startswith(f"torch {torch.__version__}: largest difference")


# ---- sliding-window attention (lesson 28): SDPA with the boolean window mask ----
@pytest.mark.parametrize("w", [1, 2, 4, 9])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sliding_window_matches_sdpa_with_the_boolean_mask(qkv, w, causal, dtype):
    from attnlib import sliding_window_mask

    Q, K, V = (M.astype(dtype) for M in qkv)  # n_q = 3 new tokens over n_k = 5 keys
    mask = sliding_window_mask(N_Q, N_K, w=w, causal=causal, align="bottom_right")  # (3, 5)
    got, _ = attention(Q, K, V, mask=mask)
    want = sdpa(Q, K, V, attn_mask=mask)  # SDPA's boolean mask: True = may attend, as attnlib's
    assert got.dtype == want.dtype == dtype
    tol = {np.float64: 1e-12, np.float32: 1e-5}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
