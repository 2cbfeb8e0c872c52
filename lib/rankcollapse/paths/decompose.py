"""The path decomposition itself: the terms by length (dynamic programme), every path term
(enumeration) or chosen ones, which lengths carry the output and how their terms align, and
the identity's error."""

from __future__ import annotations

import math

import torch

from .._validate import check_bool, check_choice, check_int
from ..residual import NORMS, check_center, matrix_norm, res
from ..san import SAN
from .counting import MAX_PATHS, head_choices, path_length, too_many_paths
from .frozen import check_linear, frozen_layers, maybe_constant

MAX_BYTES = 2**30  # default cap (1 GiB) on the memory the terms of enumerate_paths hold


@torch.no_grad()
def decompose_by_length(model: SAN, X, *, with_constant: bool = False):
    """Sum of all path terms of each length, by dynamic programming over layers.

    Returns a tensor of shape ``(L+1, ..., n, d)`` whose entry ``l`` is the sum of the terms of
    all ``C(L,l) H^l`` paths of length ``l`` (chapter "The path decomposition", the identity
    grouped by length). Never enumerates paths: layer by layer, the length-``l`` sum after the
    layer is ``skip(sum_l) + heads(sum_{l-1})``, so the cost is ``O(L^2)`` layer applications
    instead of ``(H+1)^L`` path terms. The entries add up to the model's output (plus the
    constant term, returned as ``(terms, constant)`` when ``with_constant=True``; a model with
    a non-zero constant raises ``ValueError`` without it). Attention matrices and LayerNorm
    scales are held at their forward-pass values; models with an MLP are refused.
    """
    check_bool("with_constant", with_constant)
    X, layers, _ = frozen_layers(model, X)
    return maybe_constant(_by_length(model, X, layers), layers, X, with_constant)


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
    check_linear(model)
    max_paths = check_int("max_paths", max_paths)
    max_bytes = check_int("max_bytes", max_bytes)
    cfg = model.config
    alternative = (
        "decompose_by_length sums the terms of each length by dynamic programming without "
        "enumerating them"
    )
    if too_many_paths(cfg.n_layers, cfg.n_heads + cfg.skip, max_paths):
        raise ValueError(
            f"this model has {cfg.n_heads + cfg.skip}^{cfg.n_layers} paths, more than "
            f"max_paths={max_paths}; "
            f"{alternative} (or raise max_paths)"
        )
    count = (cfg.n_heads + cfg.skip) ** cfg.n_layers
    X = model.check_input(X)
    held = count * X.numel() * X.element_size()
    if held > max_bytes:
        raise ValueError(
            f"enumerating the {count} paths of this model on X of shape {tuple(X.shape)} would "
            "hold "
            f"{held / 2**30:.3g} GiB of terms, more than max_bytes={max_bytes} "
            f"({max_bytes / 2**30:.3g} GiB); "
            f"{alternative} (or raise max_bytes)"
        )
    return X


def _enumerate(layers, X, choices) -> dict:
    """The path terms of frozen ``layers`` on ``X``, built as a tree (a prefix shared by its
    extensions)."""
    paths = {(): X}
    for layer in layers:
        nxt = {}
        for prefix, term in paths.items():
            for c in choices:
                nxt[prefix + (c,)] = layer.branch(term, c)
        paths = nxt
    return paths


@torch.no_grad()
def enumerate_paths(
    model: SAN,
    X,
    *,
    with_constant: bool = False,
    max_paths: int = MAX_PATHS,
    max_bytes: int = MAX_BYTES,
):
    """Every path term ``P_p X W_p`` of the path decomposition, by explicit enumeration.

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
    paths = _enumerate(layers, X, head_choices(model.config.n_heads, model.config.skip))
    return maybe_constant(paths, layers, X, with_constant)


CIRCUITS = ("direct", "heads", "virtual", "rest")


def circuit_groups(T) -> dict[str, torch.Tensor]:
    """The sums by length ``T`` ``(L+1, ..., n, d)`` (:func:`decompose_by_length`) grouped as the
    circuits literature names them (Elhage et al. 2021): ``"direct"`` the length-0 path,
    ``"heads"`` the individual heads (length 1), ``"virtual"`` the virtual heads (length 2) and
    ``"rest"`` every longer path (zeros when ``L < 3``). Each is shaped like ``T[0]``, and the four
    add up to ``T.sum(0)``. Book: chapter "The path decomposition", section "Direct path, heads
    and virtual heads"; measured in chapter "Which paths do trained networks use?".
    """
    if not isinstance(T, torch.Tensor) or T.dim() < 3 or not T.is_floating_point():
        raise ValueError(
            "T must be a floating tensor of sums by length (L+1, ..., n, d), got "
            f"{getattr(T, 'shape', type(T).__name__)}"
        )
    zero = torch.zeros_like(T[0])
    parts = [T[l] if l < T.shape[0] else zero for l in range(3)]
    rest = T[3:].sum(dim=0) if T.shape[0] > 3 else zero
    return dict(zip(CIRCUITS, parts + [rest]))


def _share(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` with ``0 / 0 = 0`` (nothing to share) and ``x / 0 = inf`` for ``x > 0``."""
    safe = torch.where(den > 0, den, torch.ones_like(den))
    return torch.where(
        den > 0,
        num / safe,
        torch.where(num > 0, torch.full_like(num, math.inf), torch.zeros_like(num)),
    )


@torch.no_grad()
def length_profile(model: SAN, X, *, norm: str = "l1inf", center="mean") -> dict[str, torch.Tensor]:
    """Which path lengths carry a network's output, and which have collapsed.

    With ``T_l`` the sum of the length-``l`` path terms (:func:`decompose_by_length`) and ``Y``
    the output, returns tensors of shape ``(L+1, ...)``:

    - ``"norm_share"``: ``||T_l|| / ||Y||``, how much of the output each length carries;
    - ``"relative_residual"``: ``||res(T_l)|| / ||T_l||``, how collapsed each length's term is;
    - ``"residual_share"``: ``||res(T_l)|| / ||res(Y)||``, how much of the part of the output
      that differs between tokens each length carries;
    - ``"gram"``, shape ``(..., L+1, L+1)``: the Frobenius inner products ``<T_l, T_m>_F`` of
      :func:`length_gram`, whatever ``norm`` (shares of a sum only add up in an inner product).

    Norms (``norm``: ``"l1inf"`` or ``"fro"``) and centring (``center``: ``"mean"`` or a
    function ``X -> x`` such as ``rc.centering.optimal_center``) as in
    :mod:`rankcollapse.residual`. A ratio ``0 / 0`` (a zero output, a zero
    term) is 0, as for :func:`rankcollapse.residual.relative_residual`; ``x / 0`` with ``x > 0``
    is ``inf``. The model may not add a constant term (no biases, LayerNorm shift zero): the
    constant belongs to no length.
    """
    check_choice("norm", norm, NORMS)
    check_center(center)
    X, layers, Y = frozen_layers(model, X)
    T = _by_length(model, X, layers)
    try:
        maybe_constant(T, layers, X, False)
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
        "gram": _gram(T),
    }


@torch.no_grad()
def path_norms(model: SAN, X, paths, *, norm: str = "fro") -> torch.Tensor:
    """The norms ``||P_p X W_p||`` of the terms of the given ``paths`` (tuples as
    :func:`enumerate_paths` writes them, e.g. from
    :func:`~rankcollapse.paths.counting.sample_paths`): shape ``(len(paths), ...)``, one per
    path and input. ``norm``: ``"fro"`` or ``"l1inf"`` (:mod:`rankcollapse.residual`).

    One forward pass freezes the attention (and LayerNorm scales) on ``X``; each path's term,
    without the constant (biases and shifts belong to no path), costs one head or skip
    application per layer and is reduced to its norm at once, so many paths of a large network
    fit in memory. Book: chapter "The path decomposition", section 4 (how large one path's
    term is)."""
    check_linear(model)
    check_choice("norm", norm, NORMS)
    cfg = model.config
    paths = list(paths) if not isinstance(paths, (str, bytes)) else None
    if not paths:
        raise ValueError("paths must be a list holding at least one path (a tuple per path)")
    for p in paths:
        path_length(p)  # checks the entries
        if len(p) != cfg.n_layers:
            raise ValueError(f"every path needs one entry per layer ({cfg.n_layers}), got {p!r}")
        if any(c is not None and c >= cfg.n_heads for c in p) or (None in p and not cfg.skip):
            raise ValueError(
                f"path {p!r} takes a head this model lacks or skips a layer without skips"
            )
    X, layers, _ = frozen_layers(model, X)
    out = []
    for p in paths:
        term = X
        for layer, c in zip(layers, p):
            term = layer.branch(term, c)
        out.append(matrix_norm(term, norm=norm))
    return torch.stack(out)


@torch.no_grad()
def length_gram(model: SAN, X) -> torch.Tensor:
    """Frobenius inner products of the length terms: ``G[..., l, m] = <T_l, T_m>_F``, shape
    ``(..., L+1, L+1)``, with ``T_l`` the sum of the length-``l`` path terms
    (:func:`decompose_by_length`; the model may not add a constant term).

    The output ``Y = sum_l T_l`` has ``||Y||_F^2 = sum_{l,m} G[l, m]``: the diagonal is each
    length's own share, the off-diagonal the cross terms. Cross terms near 0 mean the lengths'
    terms are nearly orthogonal; negative ones, that they cancel. Book: chapter "The path
    decomposition", section 4.
    """
    return _gram(decompose_by_length(model, X))


def _gram(T: torch.Tensor) -> torch.Tensor:
    """``<T_l, T_m>_F`` for terms ``T`` of shape ``(L+1, ..., n, d)``: ``(..., L+1, L+1)``."""
    flat = T.flatten(-2).movedim(0, -2)  # (..., L+1, n*d)
    return flat @ flat.transpose(-1, -2)


@torch.no_grad()
def decomposition_error(
    model: SAN,
    X,
    *,
    with_enumeration: bool = False,
    max_paths: int = MAX_PATHS,
    max_bytes: int = MAX_BYTES,
) -> dict[str, float]:
    """Relative error ``||sum of terms - output||_F / ||output||_F`` of the path decomposition.

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

    terms, c = maybe_constant(_by_length(model, X, layers), layers, X, True)
    out = {"by_length": err(terms.sum(0) + c)}
    if with_enumeration:
        paths = _enumerate(layers, X, head_choices(model.config.n_heads, model.config.skip))
        out["enumeration"] = err(sum(paths.values()) + c)
    return out
