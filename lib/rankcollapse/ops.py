"""The operations a layer of :class:`rankcollapse.san.SAN` is made of.

LayerNorm and RMSNorm (returning the scale they divide by), the activations, XLNet's sinusoidal
relative positions, rotary position embeddings, which keys a query may see (padding and causal
masks), and setting a module's weights from given tensors. Torch only; part of the core. Shapes
as in :mod:`rankcollapse.san`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import (
    MAX_BYTES as _CALL_BYTES,
)
from ._validate import (
    MAX_LAYERS,
    MAX_LOOP,
    MAX_WORK,
    check_bool,
    check_choice,
    check_cost,
    check_elements,
    check_int,
    check_positive_float,
    check_tensor_kind,
)

__all__ = [
    "LN_EPS",
    "ACTIVATIONS",
    "layer_norm_sigma",
    "rms_norm_sigma",
    "activation",
    "rotary_tables",
    "rotate",
    "relative_positions",
    "allowed_keys",
    "check_key_mask",
    "relative_scores",
    "set_weights",
    "MAX_BYTES",
    "weight_count",
    "check_size",
    "forward_cost",
    "check_forward",
    "check_runs",
]

LN_EPS = 1e-5
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")


def layer_norm_sigma(Y: torch.Tensor, gain: torch.Tensor, shift: torch.Tensor, eps: float = LN_EPS):
    """LayerNorm over features, returning ``(LN(Y), sigma)`` with ``sigma`` of shape ``(..., n)``
    (the network's form; :func:`rankcollapse.layernorm.layer_norm` is the reader's, ``LN(Y)`` only).

    ``LN(Y) = (Y - mean(Y) 1^T) / sigma * gain + shift`` row by row, ``sigma = sqrt(var + eps)``
    (biased variance, ``eps = 1e-5`` by default, as ``torch.nn.LayerNorm``).
    """
    check_tensor_kind("Y", Y, integers=False)
    check_positive_float("eps", eps, allow_zero=True)
    mu = Y.mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(((Y - mu) ** 2).mean(dim=-1) + eps)
    return (Y - mu) / sigma.unsqueeze(-1) * gain + shift, sigma


def rms_norm_sigma(Y: torch.Tensor, gain: torch.Tensor, eps: float = LN_EPS, dtype=None):
    """RMSNorm over features (Zhang & Sennrich 2019; Llama's), ``(N(Y), sigma)``: ``N(Y) = Y /
    sigma * gain`` row by row, ``sigma = sqrt(mean(Y^2) + eps)`` of shape ``(..., n)``, no
    centring and no shift. ``dtype``: the dtype the statistics and the division are computed
    in before the cast back and the gain (``None``: ``Y``'s; transformers' ``LlamaRMSNorm``
    computes in float32)."""
    check_tensor_kind("Y", Y, integers=False)
    check_positive_float("eps", eps, allow_zero=True)
    if not isinstance(gain, torch.Tensor) or gain.shape[-1:] not in ((), Y.shape[-1:]):
        raise ValueError(f"gain must be a tensor of {Y.shape[-1]} features, got {gain!r:.80}")
    Z = Y if dtype is None else Y.to(dtype)
    inv = torch.rsqrt(Z.pow(2).mean(-1, keepdim=True) + eps)
    return gain * (Z * inv).to(Y.dtype), (1 / inv[..., 0]).to(Y.dtype)


def activation(name: str):
    """The activation ``name`` (one of :data:`ACTIVATIONS`) as a function of a tensor."""
    check_choice("activation", name, ACTIVATIONS)
    if name == "relu":
        return torch.relu
    if name == "gelu":
        return nn.functional.gelu  # x * Phi(x), with the normal CDF
    if name == "silu":
        return nn.functional.silu  # x * sigmoid(x), Llama's
    c = math.sqrt(2.0 / math.pi)
    return lambda x: 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3.0))))


def relative_positions(n: int, d: int, clamp_len: int = 0, dtype=torch.float64) -> torch.Tensor:
    """Sinusoidal embeddings of the relative positions ``n, n-1, ..., -n+1``, shape ``(2n, d)``.

    Row ``p`` embeds the offset ``n - p`` as ``[sin(offset w), cos(offset w)]`` with frequencies
    ``w_k = 10000^(-2k/d)`` (XLNet's, after Transformer-XL); offsets beyond ``clamp_len`` are
    clamped when it is positive.
    """
    n, d = check_int("n", n), check_int("d", d)
    clamp_len = check_int("clamp_len", clamp_len, minimum=0)
    # the (2n, d) result, its sines and cosines, and the (2n, d/2) angles: about 2 * 2n * d entries
    check_elements(
        "n",
        2 * (2 * n) * d,
        itemsize=torch.empty((), dtype=dtype).element_size(),
        alternative="ask for fewer positions n (or a smaller width d)",
    )
    inv_freq = 1.0 / torch.pow(10000, torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d)
    pos = torch.arange(n, -n, -1, dtype=torch.int64).to(dtype)
    if clamp_len > 0:
        pos = pos.clamp(-clamp_len, clamp_len)
    angle = pos[:, None] * inv_freq
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)


def rotary_tables(n: int, rotary: int, theta: float = 10000.0, dtype=torch.float64):
    """``(cos, sin)`` of rotary position embeddings (Su et al. 2021), each ``(n, rotary)``: row
    ``i`` holds ``cos(i w_k)`` (``sin``) for the frequencies ``w_k = theta^(-2k/rotary)``, ``k <
    rotary/2``, written twice (``[w, w]``, Llama's ``rotate_half`` layout), computed in
    ``dtype`` (transformers: float32)."""
    n, rotary = check_int("n", n), check_int("rotary", rotary)
    if rotary % 2:
        raise ValueError(f"rotary must be even, got {rotary}")
    check_positive_float("theta", theta)
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary, 2, dtype=torch.int64).to(dtype) / rotary))
    freqs = torch.arange(n, dtype=torch.int64).to(dtype)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions applied to queries or keys ``x`` ``(..., n, e)``: the first ``r`` =
    ``cos.shape[-1]`` dimensions become ``x cos + rotate_half(x) sin`` (``rotate_half([a, b]) =
    [-b, a]``, halves of ``r/2``: dimension ``k`` is paired with ``k + r/2``), the others pass
    (partial rotary, GPT-NeoX). ``cos, sin``: :func:`rotary_tables`, cast to ``x``'s dtype."""
    for name, t in (("x", x), ("cos", cos), ("sin", sin)):
        check_tensor_kind(name, t, integers=False)
    r = cos.shape[-1]
    if sin.shape != cos.shape or r % 2 or r > x.shape[-1]:
        raise ValueError(
            f"cos and sin must have one shape (..., r), r even and at most x's last dimension "
            f"{x.shape[-1]}, got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x_rot, x_pass = x[..., :r], x[..., r:]
    half = torch.cat((-x_rot[..., r // 2 :], x_rot[..., : r // 2]), dim=-1)
    return torch.cat((x_rot * cos + half * sin, x_pass), dim=-1)


def allowed_keys(n: int, key_mask: torch.Tensor | None, causal: bool, window: int = 0):
    """Which keys each query may attend to, a boolean ``(..., 1, n, n)`` (or ``None``: all).

    Query ``i`` sees key ``j`` when ``j`` is a real token (``key_mask``), with ``causal`` when
    ``j <= i``, and with a sliding ``window`` ``w >= 1`` when ``|i - j| < w`` (with ``causal``
    too: the ``w`` tokens ``i - w < j <= i``, a decoder's sliding window; ``window=0``: no
    window; ``window >= n``: every token). Every token always sees itself, so a padding row
    attends at least to itself and no softmax row is empty (XLNet's rule; padding rows are
    never part of a result).
    """
    check_bool("causal", causal)
    window = check_int("window", window, minimum=0)  # SANConfig's check of its window
    if key_mask is None and not causal and (window == 0 or window >= n):
        return None
    eye = torch.eye(n, dtype=torch.bool)
    ok = (
        torch.ones(n, n, dtype=torch.bool)
        if key_mask is None
        else key_mask[..., None, None, :].expand(*key_mask.shape[:-1], 1, n, n)
    )
    if causal:
        ok = ok & torch.ones(n, n, dtype=torch.bool).tril()
    if window:
        i = torch.arange(n)
        ok = ok & ((i[:, None] - i[None, :]).abs() < window)
    return ok | eye


def set_weights(module: nn.Module, given: dict, where: str, names=None) -> None:
    """Replace ``module``'s parameters (or those in ``names``) by the tensors (or NumPy arrays)
    ``given``,
    checking each."""
    expected = {k: v for k, v in module.named_parameters() if names is None or k in names}
    missing, extra = sorted(set(expected) - set(given)), sorted(set(given) - set(expected))
    if missing or extra:
        raise ValueError(
            f"{where}: weights {'missing ' + str(missing) if missing else ''}"
            f"{'; ' if missing and extra else ''}{'unexpected ' + str(extra) if extra else ''}"
            f" (expected {sorted(expected)})"
        )
    for name, old in expected.items():
        t = given[name]
        if type(t).__module__ == "numpy" and hasattr(
            t, "shape"
        ):  # an array: a tensor of its values
            t = torch.from_numpy(t.copy()) if t.dtype.kind == "f" else t
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}[{name!r}] must be a tensor, got {type(t).__name__}")
        if t.shape != old.shape:
            raise ValueError(
                f"{where}[{name!r}] must have shape {tuple(old.shape)}, got {tuple(t.shape)}"
            )
        if not (isinstance(t, nn.Parameter) and t.dtype == old.dtype):
            t = nn.Parameter(t.detach().to(old.dtype).clone(), requires_grad=old.requires_grad)
        setattr(module, name, t)


def check_key_mask(key_mask, shape) -> torch.Tensor | None:
    """``key_mask`` as a boolean tensor of ``shape`` ``(..., n)``, ``True`` on real tokens.

    Booleans or 0/1 integers; every sequence must hold at least one real token (a row of padding
    only has nothing to attend to and no residual: a ``ValueError`` names its index).
    """
    if key_mask is None:
        return None
    key_mask = torch.as_tensor(key_mask)
    if key_mask.dtype not in (torch.bool, torch.int32, torch.int64, torch.uint8):
        raise TypeError(
            f"key_mask must be boolean (True on real tokens) or 0/1 integers, got {key_mask.dtype}"
        )
    if key_mask.shape != tuple(shape):
        raise ValueError(
            f"key_mask must have shape {tuple(shape)} (the tokens of X), got "
            f"{tuple(key_mask.shape)}"
        )
    if key_mask.dtype != torch.bool:
        if ((key_mask != 0) & (key_mask != 1)).any():
            raise ValueError("key_mask must hold 0 and 1 (or booleans) only")
        key_mask = key_mask.bool()
    empty = ~key_mask.any(dim=-1)
    if empty.any():
        row = tuple(int(i) for i in empty.nonzero()[0])
        raise ValueError(f"key_mask has a sequence with no real token (all padding) at index {row}")
    return key_mask


def relative_scores(block, q: torch.Tensor, k: torch.Tensor, segments=None) -> torch.Tensor:
    """XLNet's attention logits times ``sqrt(d_qk)``, ``(..., H, n, n)``, for a block with
    ``attention="relative"``.

    ``(q_i + u) k_j^T + (q_i + v) r_{i-j}^T [+ (q_i + s) e_{ij}^T]``: ``u, v, s`` the block's
    ``r_w_bias, r_r_bias, r_s_bias`` ``(H, d_qk)``; ``r_{i-j}`` row ``n - i + j`` of
    :func:`relative_positions` mapped by ``W_R`` ``(H, d, d_qk)``; ``e_ij`` the block's
    ``seg_embed[0]`` when tokens ``i`` and ``j`` have the same segment id, ``seg_embed[1]`` when
    not (only with ``segments`` ``(..., n)``). ``q, k``: ``(..., H, n, d_qk)``.
    """
    if not hasattr(block, "cfg"):
        raise TypeError(f"block must be a rankcollapse.san.Block, got {type(block).__name__}")
    cfg = block.cfg
    n = q.shape[-2]
    r = relative_positions(n, cfg.d_model, cfg.clamp_len, cfg.position_dtype or cfg.dtype).to(
        cfg.dtype
    )
    k_r = torch.einsum("pd,hde->hpe", r, block.W_R)  # (H, 2n, dqk)
    ac = (q + block.r_w_bias[:, None, :]) @ k.transpose(-1, -2)
    bd_all = (q + block.r_r_bias[:, None, :]) @ k_r.transpose(-1, -2)  # (..., H, n, 2n)
    i = torch.arange(n)
    offset = (n - i[:, None] + i[None, :]).expand(
        *bd_all.shape[:-1], n
    )  # row p embeds i - j = n - p
    scores = ac + torch.gather(bd_all, -1, offset)
    if segments is not None:
        e = torch.einsum("...hne,she->...hns", q + block.r_s_bias[:, None, :], block.seg_embed)
        differ = (segments[..., :, None] != segments[..., None, :])[..., None, :, :]
        scores = scores + torch.where(differ, e[..., 1:2], e[..., 0:1])
    return scores


# the largest network SAN builds: 2 GiB of weights (BERT-base in float64: 0.7 GiB)
MAX_BYTES = 2**31


def weight_count(config) -> int:
    """How many weights a SAN of ``config`` (a :class:`~rankcollapse.san.SANConfig`) holds: every
    parameter, as ``sum(p.numel() for p in SAN(config).parameters())`` counts them
    (``config.block_shapes()`` per layer, shared layers once, and the final norm)."""
    if not all(
        hasattr(config, k)
        for k in ("n_heads", "d_model", "d_qk", "d_v", "mlp", "shared", "block_shapes")
    ):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    layer = sum(math.prod(shape) for shape, _, _ in config.block_shapes().values())
    layers = min(config.n_layers, 1) if config.shared else config.n_layers
    final = config.d_model * (1 if config.norm == "rms" else 2)
    return layer * layers + (final if config.final_layernorm else 0)


def _block_weights(config) -> int:
    """The weight matrices of one layer (the multiply-adds per token of its projections)."""
    H, d, m = config.n_heads, config.d_model, config.mlp
    kv = getattr(config, "n_kv_heads", None) or H
    gated = getattr(config, "gated", False)
    return (
        d * (H * config.d_qk + kv * (config.d_qk + config.d_v))
        + H * config.d_v * d
        + (3 if gated else 2) * d * m
    )


def forward_cost(config, shape) -> tuple[int, int]:
    """``(bytes, multiply-adds)`` of a forward pass of a SAN of ``config`` on tokens of ``shape``
    ``(..., n, d)``: the attention matrices and hidden states it keeps (every layer's), and its
    arithmetic (scores, mixing, projections, MLP)."""
    if len(shape) < 2:
        raise ValueError(f"shape must be (..., n, d), got {tuple(shape)}")
    n, d = shape[-2], shape[-1]
    b = math.prod(shape[:-2])
    L, H = max(config.n_layers, 1), config.n_heads
    item = torch.finfo(config.dtype).bits // 8
    n_bytes = L * b * (H * n * n + 3 * n * d) * item
    work = L * b * (H * n * n * (config.d_qk + config.d_v) + n * _block_weights(config))
    return n_bytes, work


def check_forward(config, shape) -> None:
    """Refuse a forward pass on tokens of ``shape`` whose :func:`forward_cost` exceeds the library's
    caps."""
    n_bytes, work = forward_cost(config, shape)
    alternative = "use fewer tokens (n), a smaller batch, or fewer layers or heads"
    check_cost(f"X (shape {tuple(shape)})", n_bytes, _CALL_BYTES, alternative=alternative)
    check_cost(
        f"X (shape {tuple(shape)})", work, MAX_WORK, unit="multiply-adds", alternative=alternative
    )


def check_runs(config, shape, runs: int, *, name: str = "samples", per_layer: int = 1) -> None:
    """Refuse, before any work, a study that builds ``runs`` networks of ``config`` and runs each
    forward on tokens of ``shape`` ``(..., n, d)`` (``runs`` = samples times the settings studied).

    Checked in turn: the network itself (:func:`check_size`) and one forward pass
    (:func:`check_forward`); the total arithmetic, ``runs x`` (a forward pass and the products of
    the weights, per layer), against
    :data:`rankcollapse._validate.MAX_WORK` multiply-adds; and the Python-level layer passes,
    ``runs x (n_layers + 1) x per_layer`` (``per_layer``: passes' worth of Python work a layer
    costs, e.g. the linear programmes of the optimal centre), against
    :data:`rankcollapse._validate.MAX_LOOP`.
    The last two name ``name`` (the argument counting the networks)."""
    runs = check_int(name, runs, minimum=0)
    check_size(config)
    check_forward(config, shape)
    alternative = f"use fewer {name}, fewer layers (n_layers), or fewer or smaller tokens"
    work = runs * (forward_cost(config, shape)[1] + weight_count(config) * config.d_model)
    check_cost(
        name,
        work,
        MAX_WORK,
        unit=f"multiply-adds ({name} x n_layers x per-layer work)",
        alternative=alternative,
    )
    passes = runs * (config.n_layers + 1) * per_layer
    check_cost(
        name,
        passes,
        MAX_LOOP,
        unit=f"layer passes ({name} x (n_layers + 1), each a Python-level step)",
        alternative=alternative,
    )


def check_size(config, max_bytes: int = MAX_BYTES) -> None:
    """Refuse, before any allocation, a network whose weights would take more than ``max_bytes``, or
    deeper than :data:`rankcollapse._validate.MAX_LAYERS` layers (building and running each layer
    costs time whatever its size)."""
    check_cost(
        "n_layers",
        config.n_layers,
        MAX_LAYERS,
        unit="layers",
        alternative="the book's deepest network has 1024 layers; study depth on a shallower grid",
    )
    n_bytes = weight_count(config) * torch.finfo(config.dtype).bits // 8
    if n_bytes > max_bytes:
        raise ValueError(
            f"a SAN with n_layers={config.n_layers}, n_heads={config.n_heads}, "
            f"d_model={config.d_model}, "
            f"d_qk={config.d_qk}, d_v={config.d_v}, mlp={config.mlp} would hold "
            f"{n_bytes / 2**30:.3g} GiB of "
            f"weights, more than the {max_bytes / 2**30:.3g} GiB rankcollapse.san.MAX_BYTES "
            "allows: "
            "make it smaller (or raise rankcollapse.san.MAX_BYTES)"
        )
