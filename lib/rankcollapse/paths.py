"""The path decomposition of a self-attention network (Dong et al. 2021, Theorem 2.1).

Hold every attention matrix ``P_h`` at the value it takes in the forward pass. The network is
then *linear* in its input, and expanding the product of layers gives

.. math::  \\mathrm{SAN}(X) = \\sum_{\\text{paths } p} P_p\\, X\\, W_p \\;+\\; \\text{constant},

where a path picks, in each layer, one head ``h`` (or, with skip connections, the skip,
written ``None`` here), ``P_p`` is the product of the chosen attention matrices (later layers on
the left) and ``W_p`` the product of the chosen ``W_{V,h} W_{O,h}`` (earlier layers on the
left). The constant collects the biases (``1 b^T`` in the paper). A path's *length* is the
number of heads it passes through; with skips there are ``C(L, l) H^l`` paths of length ``l``.

What is handled exactly: skip connections, biases (returned as a separate constant term when
``with_constant=True``) and LayerNorm, with each token's standard deviation frozen at its
forward-pass value (then LayerNorm is ``Y -> S^{-1} Y C G + 1 shift^T``: a left scaling by
the per-token ``1/sigma``, right multiplications by the centring ``C = I - 11^T/d`` and the
gain ``G``). With LayerNorm the left factors are ``S^{-1} P`` rather than ``P``, which are no
longer row-stochastic; the identity still holds exactly. MLPs are refused: an MLP is not
linear, so the network has no path decomposition.

Book: chapter "The path decomposition".
"""

from __future__ import annotations

import math
from itertools import product

import torch

from ._validate import check_bool, check_choice, check_int
from .residual import CENTERS, NORMS, matrix_norm, res
from .san import SAN, check_san

__all__ = [
    "path_count",
    "length_distribution",
    "mean_path_length",
    "enumerate_paths",
    "decompose_by_length",
    "length_profile",
    "decomposition_error",
    "frozen_layers",
    "FrozenLayer",
    "all_paths",
    "path_length",
    "MAX_BYTES",
    "MAX_PATHS",
    "MAX_LENGTH_DISTRIBUTION",
]

MAX_PATHS = 100_000  # default cap on the number of paths enumerate_paths and all_paths build
MAX_BYTES = 2**30  # default cap (1 GiB) on the memory the terms of enumerate_paths hold
MAX_LENGTH_DISTRIBUTION = 10**7  # largest L for length_distribution (an (L+1,) float64 tensor)
_EXACT_DISTRIBUTION = 1000  # up to this L, length_distribution divides exact integers


# --------------------------------------------------------------------------- counting


def path_count(L: int, H: int, length: int, skip: bool = True) -> int:
    """Number of paths of ``length`` heads through ``L`` layers of ``H`` heads: ``C(L, l) H^l``.

    Without skip connections every path has length ``L`` (``H^L`` of them). Exact integer.
    """
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    length = check_int("length", length, minimum=0)
    if not check_bool("skip", skip):
        return H**L if length == L else 0
    return math.comb(L, length) * H**length if length <= L else 0


def length_distribution(L: int, H: int) -> torch.Tensor:
    """Fraction of paths of each length ``l = 0..L`` with skips: ``C(L,l) H^l / (H+1)^L``.

    A binomial distribution with ``L`` trials and success probability ``H / (H+1)``: each layer
    is crossed through one of ``H`` heads or skipped. Returns a float64 tensor of shape ``(L+1,)``.
    Up to ``L = 1000`` each entry is the exact integer ratio, correctly rounded; beyond, the
    binomial probability in log space, ``exp(lgamma(L+1) - lgamma(l+1) - lgamma(L-l+1) + l log H
    - L log(H+1))`` (relative error about ``L`` times the float64 epsilon; entries below about
    ``1e-308`` are 0). Fast for any size up to ``L = 10**7`` (:data:`MAX_LENGTH_DISTRIBUTION`).
    """
    L = check_int("L", L, minimum=0, maximum=MAX_LENGTH_DISTRIBUTION)
    H = check_int("H", H)
    if L <= _EXACT_DISTRIBUTION:
        total = (H + 1) ** L
        # exact rational -> float: divide big integers with Python's correctly rounded division
        return torch.tensor([math.comb(L, l) * H**l / total for l in range(L + 1)], dtype=torch.float64)
    l = torch.arange(L + 1, dtype=torch.float64)
    log_p = (math.lgamma(L + 1) - torch.lgamma(l + 1) - torch.lgamma(L - l + 1)
             + l * math.log(H) - L * math.log(H + 1))
    return torch.exp(log_p)


def mean_path_length(L: int, H: int) -> float:
    """Mean path length with skips, ``L H / (H + 1)`` (the binomial mean)."""
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    return L * H / (H + 1)


# ------------------------------------------------------------------ frozen (linear) layers


class FrozenLayer:
    """One layer of a SAN with its attention matrices (and LayerNorm scales) held fixed.

    The layer is then an affine map ``F(Y) = skip(Y) + sum_h head(Y, h) + offset``; each
    method below applies one of those pieces to a stack of terms of shape ``(K, ..., n, d)``
    (``K`` terms at once, e.g. one per path length).
    """

    def __init__(self, block, P: torch.Tensor, sigma: torch.Tensor | None):
        cfg = block.cfg
        self.block, self.P, self.skip_on, self.ln = block, P, cfg.skip, cfg.layernorm
        self.H, self.dv = cfg.n_heads, cfg.d_v
        # value and output maps of all heads side by side: (d, H*dv) and (H*dv, d)
        self.W_V = block.W_V.detach().permute(1, 0, 2).reshape(cfg.d_model, -1)
        self.W_O = block.W_O.detach().reshape(-1, cfg.d_model)
        if self.ln != "none":
            self.gain, self.shift = block.ln1_gain.detach(), block.ln1_shift.detach()
            self.inv_sigma = (1.0 / sigma).unsqueeze(-1)  # (..., n, 1): the left scaling S^{-1}

    # LayerNorm's linear part with frozen scales: Y -> S^{-1} (Y C) G
    def _norm(self, Y):
        return (Y - Y.mean(dim=-1, keepdim=True)) * self.inv_sigma * self.gain

    def _pre(self, Y):
        return self._norm(Y) if self.ln == "pre" else Y

    def _post(self, Y):
        return self._norm(Y) if self.ln == "post" else Y

    def _mix(self, Y, heads: slice):
        """``sum_{h in heads} P_h Y W_{V,h} W_{O,h}`` for ``Y`` of shape ``(K, ..., n, d)``."""
        H, dv = self.H, self.dv
        cols = slice(heads.start * dv, heads.stop * dv)
        V = Y @ self.W_V[:, cols]  # (K, ..., n, h*dv)
        V = V.unflatten(-1, (-1, dv)).transpose(-2, -3)  # (K, ..., h, n, dv)
        V = self.P[..., heads, :, :] @ V  # attention mixes tokens, head by head
        return V.transpose(-2, -3).flatten(-2) @ self.W_O[cols, :]

    def skip(self, Y):
        """The skip branch (the identity, or LayerNorm's linear part in a post-LN layer)."""
        return self._post(Y)

    def heads(self, Y):
        """All heads at once: ``sum_h head(Y, h)``."""
        return self._post(self._mix(self._pre(Y), slice(0, self.H)))

    def head(self, Y, h: int):
        """One head's branch: ``P_h Y W_{V,h} W_{O,h}`` (with LayerNorm's linear part around it)."""
        return self._post(self._mix(self._pre(Y), slice(h, h + 1)))

    def offset(self, like: torch.Tensor):
        """``F(0)``: the constant the layer adds (biases and LayerNorm's shift), shaped like ``like``."""
        b = self.block
        zero = torch.zeros_like(like)
        if self.ln == "pre":  # LN(0) = 1 shift^T enters the attention
            Z = zero + self.shift
        else:
            Z = zero
        A = self._mix(Z.unsqueeze(0), slice(0, self.H))[0] if self.ln == "pre" else zero
        if b.cfg.bias:
            # value bias: P_h 1 b_V^T W_O = 1 b_V^T W_O since P_h is row-stochastic
            A = A + (b.b_V.detach().reshape(-1) @ self.W_O) + b.b_O.detach()
        if self.ln == "post":
            return self._norm(A) + self.shift
        return A

    def __call__(self, Y):
        """The whole affine map ``F(Y)`` with frozen attention: equals the layer's forward output."""
        out = self.heads(Y.unsqueeze(0))[0] + self.offset(Y)
        return out + self.skip(Y) if self.skip_on else out


def _check_linear(model) -> None:
    check_san(model)
    if model.config.mlp:
        raise ValueError(
            "model has an MLP (config.mlp > 0): an MLP is not linear, so the network has no path "
            "decomposition; use a model with mlp=0"
        )


def frozen_layers(model: SAN, X) -> tuple[torch.Tensor, list[FrozenLayer], torch.Tensor]:
    """Run ``model`` on ``X`` and return ``(X, layers, output)``: the checked input, each layer
    frozen at its forward-pass attention (and LayerNorm scales), and the model's output."""
    _check_linear(model)
    X = model.check_input(X)
    with torch.no_grad():
        out = model(X)
    layers = [FrozenLayer(b, P, s) for b, P, s in zip(model.layers, out.attentions, out.ln_scales)]
    return X, layers, out.last_hidden_state


def _constant(layers, X):
    c = torch.zeros_like(X)
    for layer in layers:
        c = layer(c)
    return c


def _maybe_constant(result, layers, X, with_constant):
    cfg = layers[0].block.cfg if layers else None
    no_constant = cfg is None or (
        not cfg.bias and all(layer.ln == "none" or not layer.shift.any() for layer in layers)
    )
    if no_constant and not with_constant:  # no bias and no LayerNorm shift: the constant is 0
        return result
    c = _constant(layers, X)
    if with_constant:
        return result, c
    if c.abs().max() > 0:
        raise ValueError(
            "this model adds a constant term (biases or a LayerNorm shift), which belongs to no "
            "path; call with with_constant=True to receive it as (terms, constant)"
        )
    return result


@torch.no_grad()
def decompose_by_length(model: SAN, X, *, with_constant: bool = False):
    """Sum of all path terms of each length, by dynamic programming over layers.

    Returns a tensor of shape ``(L+1, ..., n, d)`` whose entry ``l`` is the sum of the terms of
    all ``C(L,l) H^l`` paths of length ``l`` (chapter "The path decomposition", Theorem 2.1
    grouped by length). Never enumerates paths: layer by layer, the length-``l`` sum after the
    layer is ``skip(sum_l) + heads(sum_{l-1})``, so the cost is ``O(L^2)`` layer applications
    instead of ``(H+1)^L`` path terms. The entries add up to the model's output (plus the
    constant term, returned as ``(terms, constant)`` when ``with_constant=True``; a model with
    a non-zero constant raises ``ValueError`` without it). Attention matrices and LayerNorm
    scales are held at their forward-pass values; models with an MLP are refused.
    """
    check_bool("with_constant", with_constant)
    X, layers, _ = frozen_layers(model, X)
    return _maybe_constant(_by_length(model, X, layers), layers, X, with_constant)


def _by_length(model: SAN, X, layers) -> torch.Tensor:
    """The dynamic programme of :func:`decompose_by_length` on frozen ``layers``: ``(L+1, ...)``."""
    L = len(layers)
    skip = model.config.skip
    terms = X.unsqueeze(0)  # lengths lo .. lo+K-1; starts with the single length-0 term X
    lo = 0
    for layer in layers:
        through = layer.heads(terms)  # every path extended through a head: lengths lo+1 ..
        if skip:
            stay = layer.skip(terms)
            terms = torch.cat([stay[:1], stay[1:] + through[:-1], through[-1:]], dim=0)
        else:
            terms, lo = through, lo + 1
    full = torch.zeros((L + 1,) + X.shape, dtype=X.dtype)
    full[lo : lo + terms.shape[0]] = terms
    return full


def _check_enumeration(model: SAN, X, max_paths, max_bytes) -> torch.Tensor:
    """Refuse, before any work, an enumeration that would build too many terms or hold too much.

    The terms held at the end are ``paths x (tokens x width x element size)`` bytes for each
    input in the batch; the layer before holds a further ``1 / (H + skip)`` of that.
    """
    _check_linear(model)
    max_paths = check_int("max_paths", max_paths)
    max_bytes = check_int("max_bytes", max_bytes)
    cfg = model.config
    count = (cfg.n_heads + cfg.skip) ** cfg.n_layers
    alternative = "decompose_by_length sums the terms of each length by dynamic programming without enumerating them"
    if count > max_paths:
        raise ValueError(
            f"this model has {count} paths, more than max_paths={max_paths}; {alternative} "
            "(or raise max_paths)"
        )
    X = model.check_input(X)
    held = count * X.numel() * X.element_size()
    if held > max_bytes:
        raise ValueError(
            f"enumerating the {count} paths of this model on X of shape {tuple(X.shape)} would hold "
            f"{held / 2**30:.3g} GiB of terms, more than max_bytes={max_bytes} ({max_bytes / 2**30:.3g} GiB); "
            f"{alternative} (or raise max_bytes)"
        )
    return X


def _enumerate(layers, X, choices) -> dict:
    """The path terms of frozen ``layers`` on ``X``, built as a tree (a prefix shared by its extensions)."""
    paths = {(): X}
    for layer in layers:
        nxt = {}
        for prefix, term in paths.items():
            for c in choices:
                nxt[prefix + (c,)] = layer.skip(term) if c is None else layer.head(term.unsqueeze(0), c)[0]
        paths = nxt
    return paths


@torch.no_grad()
def enumerate_paths(model: SAN, X, *, with_constant: bool = False, max_paths: int = MAX_PATHS,
                    max_bytes: int = MAX_BYTES):
    """Every path term ``P_p X W_p`` of Theorem 2.1, by explicit enumeration.

    Returns a dict from path to term. A path is a tuple of length ``L``: entry ``l`` is the head
    index taken in layer ``l`` (0-based), or ``None`` where the path skips the layer (only with
    skip connections). Each term has the shape of ``X``. Terms are built layer by layer, a
    path's prefix shared by its extensions; there are ``(H+1)^L`` paths with skips and ``H^L``
    without, so this is for small networks. Two guards refuse, before any work, a call that
    would build more than ``max_paths`` terms (default 100,000) or hold more than ``max_bytes``
    of them (default 1 GiB: paths x tokens x width x element size, times the batch); for large
    networks :func:`decompose_by_length` gives the sums by length without enumerating. The terms
    add up to the model's output (see :func:`decompose_by_length` for the constant term and what
    is refused).
    """
    X = _check_enumeration(model, X, max_paths, max_bytes)
    check_bool("with_constant", with_constant)
    X, layers, _ = frozen_layers(model, X)
    paths = _enumerate(layers, X, _choices(model.config.n_heads, model.config.skip))
    return _maybe_constant(paths, layers, X, with_constant)


def _choices(H: int, skip: bool) -> list:
    """What a path may take in one layer: the skip (``None``, with skip connections) or a head."""
    return ([None] if skip else []) + list(range(H))


def all_paths(L: int, H: int, skip: bool = True, *, max_paths: int = MAX_PATHS):
    """Every path through ``L`` layers of ``H`` heads, in the order :func:`enumerate_paths` uses.

    ``(H+1)^L`` tuples with skips, ``H^L`` without; ``L = 0`` gives the one empty path ``[()]``.
    More than ``max_paths`` (default 100,000) raises ``ValueError`` instead of filling memory.
    """
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    skip = check_bool("skip", skip)
    max_paths = check_int("max_paths", max_paths)
    count = (H + skip) ** L
    if count > max_paths:
        raise ValueError(f"{L} layers of {H} heads have {count} paths, more than max_paths={max_paths}")
    return list(product(_choices(H, skip), repeat=L))


def path_length(path) -> int:
    """Number of heads a path passes through (its layers that are not skipped).

    ``path``: a tuple (or list) with one entry per layer, a head index ``>= 0`` or ``None``.
    """
    if not isinstance(path, (tuple, list)):
        raise TypeError(f"path must be a tuple of head indices or None, one per layer, got {type(path).__name__}")
    for c in path:
        if c is not None:
            check_int("path entry", c, minimum=0)
    return sum(c is not None for c in path)


def _share(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` with ``0 / 0 = 0`` (nothing to share) and ``x / 0 = inf`` for ``x > 0``."""
    safe = torch.where(den > 0, den, torch.ones_like(den))
    return torch.where(den > 0, num / safe, torch.where(num > 0, torch.full_like(num, math.inf), torch.zeros_like(num)))


@torch.no_grad()
def length_profile(model: SAN, X, *, norm: str = "l1inf", center: str = "mean") -> dict[str, torch.Tensor]:
    """Which path lengths carry a network's output, and which have collapsed.

    With ``T_l`` the sum of the length-``l`` path terms (:func:`decompose_by_length`) and ``Y``
    the output, returns tensors of shape ``(L+1, ...)``:

    - ``"norm_share"``: ``||T_l|| / ||Y||``, how much of the output each length carries;
    - ``"relative_residual"``: ``||res(T_l)|| / ||T_l||``, how collapsed each length's term is;
    - ``"residual_share"``: ``||res(T_l)|| / ||res(Y)||``, how much of the part of the output
      that differs between tokens each length carries.

    Norms (``norm``: ``"l1inf"`` or ``"fro"``) and centring (``center``: ``"mean"`` or
    ``"optimal"``) as in :mod:`rankcollapse.residual`. A ratio ``0 / 0`` (a zero output, a zero
    term) is 0, as for :func:`rankcollapse.residual.relative_residual`; ``x / 0`` with ``x > 0``
    is ``inf``. The model may not add a constant term (no biases, LayerNorm shift zero): the
    constant belongs to no length.
    """
    check_choice("norm", norm, NORMS)
    check_choice("center", center, CENTERS)
    X, layers, Y = frozen_layers(model, X)
    T = _by_length(model, X, layers)
    try:
        _maybe_constant(T, layers, X, False)
    except ValueError:
        raise ValueError(
            "model adds a constant term (biases or a LayerNorm shift), which belongs to no path "
            "length, so length_profile cannot share the output among lengths; use a model with "
            "bias=False and LayerNorm shift 0, or rc.paths.decompose_by_length(model, X, "
            "with_constant=True) for the terms and the constant"
        ) from None
    norm_T = matrix_norm(T, norm=norm)
    res_T = matrix_norm(res(T, center=center, norm=norm), norm=norm)
    res_Y = matrix_norm(res(Y, center=center, norm=norm), norm=norm)
    return {
        "norm_share": _share(norm_T, matrix_norm(Y, norm=norm)),
        "relative_residual": _share(res_T, norm_T),
        "residual_share": _share(res_T, res_Y),
    }


@torch.no_grad()
def decomposition_error(model: SAN, X, *, with_enumeration: bool = False, max_paths: int = MAX_PATHS,
                        max_bytes: int = MAX_BYTES) -> dict[str, float]:
    """Relative error ``||sum of terms - output||_F / ||output||_F`` of Theorem 2.1.

    ``"by_length"`` sums :func:`decompose_by_length` (plus the constant term), always;
    ``"enumeration"`` sums :func:`enumerate_paths`, only with ``with_enumeration=True`` (it then
    refuses, before any work, a network too large to enumerate under ``max_paths`` and
    ``max_bytes``). Both reuse one forward pass. In float64 both are at rounding level (about
    ``1e-15``); anything larger is a bug. When the output is exactly zero the error is the
    absolute ``||sum of terms||_F`` instead (0 when the decomposition is exact).
    """
    if check_bool("with_enumeration", with_enumeration):
        X = _check_enumeration(model, X, max_paths, max_bytes)
    X, layers, Y = frozen_layers(model, X)
    scale = torch.linalg.vector_norm(Y)

    def err(total):
        diff = torch.linalg.vector_norm(total - Y)
        return float(diff / scale if scale > 0 else diff)

    terms, c = _maybe_constant(_by_length(model, X, layers), layers, X, True)
    out = {"by_length": err(terms.sum(0) + c)}
    if with_enumeration:
        paths = _enumerate(layers, X, _choices(model.config.n_heads, model.config.skip))
        out["enumeration"] = err(sum(paths.values()) + c)
    return out
