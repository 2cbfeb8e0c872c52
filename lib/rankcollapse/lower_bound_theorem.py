"""The book's lower bound on the residual with skip connections: the layer constants, the
theorem's bound through depth and the one-layer lemma (a-posteriori), for a core ``SAN``.

The statement is :mod:`rankcollapse.lower_bound`'s docstring; that module (the networks that
reach the bound, and the bound checked on them) re-exports these names. Core dependencies only.
Book: chapter "A lower bound with skip connections".
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import (
    check_elements,
    check_int,
    check_tensor_kind,
)
from .residual import norm_inf, res
from .san import SAN, check_san
from .theory import qk_matrices, value_matrices

__all__ = [
    "STEP",
    "THRESHOLD",
    "OMEGA_LIMIT",
    "residual_inf",
    "layer_constants",
    "depth_bound",
    "contraction",
    "wide_depth_bound",
    "lower_bound",
    "wide_lower_bound",
    "one_layer_bound",
]

#: ``K`` of the theorem: ``(1 - x)^-2 <= 1 + K x`` for ``0 <= x <= THRESHOLD``.
STEP = 15 / 4
#: The largest ``k b^2`` at which a layer is treated as small (the theorem's ``x_0 = 1/3``).
THRESHOLD = 1 / 3
#: The theorem needs ``Omega < 1/2`` in every layer.
OMEGA_LIMIT = 0.5


def residual_inf(X) -> torch.Tensor:
    """``b = ||res(X)||_inf``, the largest row l1 norm of the mean-centred residual; ``(..., n, d)
    -> (...)``."""
    return norm_inf(res(X))


def head_norms(QK: torch.Tensor, W: torch.Tensor) -> dict:
    """Each head's ``||W_QK,h||_1``, ``||W_QK,h||_inf``, ``||W_h||_1``, ``||W_h||_inf`` (largest
    absolute column and row sums) of heads ``QK, W`` ``(..., H, d, d)``: each ``(..., H)``."""
    A, B = QK.abs(), W.abs()
    return {
        "qk_1": A.sum(-2).amax(-1),
        "qk_inf": A.sum(-1).amax(-1),
        "w_1": B.sum(-2).amax(-1),
        "w_inf": B.sum(-1).amax(-1),
    }


def constants_of_norms(norms: dict, d_qk: int):
    """``(k, Omega)`` from :func:`head_norms`: ``k = (4/sqrt(d_qk)) sum_h min(||W_QK,h||_1,
    ||W_QK,h||_inf) ||W_h||_inf`` and ``Omega = sum_h ||W_h||_inf``, each ``(...)``."""
    q = torch.minimum(norms["qk_1"], norms["qk_inf"])
    omega = norms["w_inf"]  # ||W_h||_inf, the largest row sum
    return 4 / math.sqrt(d_qk) * (q * omega).sum(-1), omega.sum(-1)


def head_constants(QK: torch.Tensor, W: torch.Tensor, d_qk: int):
    """``(k, Omega)`` of layers whose heads are ``QK, W`` ``(..., H, d, d)``: each ``(...)``."""
    return constants_of_norms(head_norms(QK, W), d_qk)


def layer_constants(model) -> tuple[torch.Tensor, torch.Tensor]:
    """``(k_l, Omega_l)`` of every layer of a core ``SAN``, each ``(L,)`` (see the module
    docstring)."""
    model = _check_skip_attention(model)
    return head_constants(qk_matrices(model), value_matrices(model), model.config.d_qk)


def depth_bound(b0, k, omega, depths) -> torch.Tensor:
    """The theorem's lower bound on ``b_L = ||res(X_L)||_inf`` at each depth of ``depths``.

    ``b0``: the input's ``||res(X)||_inf``; ``k``, ``omega``: bounds on every layer's constants
    (:func:`layer_constants`; ``omega < 1/2``, else ``ValueError``: the theorem does not apply);
    all three broadcast together (tensors or numbers; shapes that do not broadcast are refused).
    Returns ``max((1 - 2 omega)^L b0, b~ / sqrt(1 + (15/4) k b~^2 L))`` with ``b~ = min(b0, (1 - 2
    omega)/sqrt(3 k))``, shaped ``(..., len(depths))``, float64. Book: chapter "A lower bound with
    skip connections", section 3.
    """
    b0, k, omega, L = _bound_args(b0, k, omega, depths)
    if (omega >= OMEGA_LIMIT).any():
        raise ValueError(
            "omega must be below 1/2 in every layer (the theorem's regime), got max "
            f"{omega.max():.4g}"
        )
    return _power_bound(b0, k, 1 - 2 * omega, L)


def contraction(omega, n=None) -> torch.Tensor:
    """``rho = (1 - Omega) / (1 + (2 c - 1) Omega)``, ``c = (n - 1)/n`` (``c = 1`` when ``n`` is
    ``None``): the least fraction of ``||res(X)||_inf`` one layer with skips keeps when its value
    maps' absolute row sums add up to ``Omega < 1`` (book: chapter "A lower bound with skip
    connections", the lemma of section 7). Float64, shaped as ``omega``."""
    omega = as_float64("omega", omega)
    if not torch.isfinite(omega).all() or (omega < 0).any() or (omega >= 1).any():
        raise ValueError(f"omega must be in [0, 1), got {omega.flatten()[:4].tolist()}")
    c = _token_factor(n)
    return (1 - omega) / (1 + (2 * c - 1) * omega)


def wide_depth_bound(b0, k, omega, depths, n=None) -> torch.Tensor:
    """The lower bound of the book's theorem for ``Omega < 1`` (chapter "A lower bound with skip
    connections", section 7) at each depth of ``depths``.

    With ``c = (n - 1)/n`` (``1`` when the number of tokens ``n`` is not given), ``k' = c k`` and
    ``rho`` = :func:`contraction`: ``max(rho^L b0, b~ / sqrt(1 + (15/4) k' b~^2 L))`` with ``b~ =
    min(b0, rho / sqrt(3 k'))``. ``b0``, ``k``, ``omega`` broadcast together; ``omega >= 1`` is
    refused (bounded value maps can then cancel the skip, section 6). Float64, ``(...,
    len(depths))``.
    """
    b0, k, omega, L = _bound_args(b0, k, omega, depths)
    rho = contraction(omega, n)  # refuses omega >= 1
    return _power_bound(b0, _token_factor(n) * k, rho, L)


def _token_factor(n) -> float:
    """``c = (n - 1)/n``: the largest l1 distance of a row of an ``(n, n)`` stochastic matrix from
    the mean row, over 2 (``1`` for ``n`` not given)."""
    if n is None:
        return 1.0
    n = check_int("n", n, minimum=2)
    return (n - 1) / n


def _bound_args(b0, k, omega, depths):
    b0, k, omega = (as_float64(name, v) for name, v in (("b0", b0), ("k", k), ("omega", omega)))
    try:
        torch.broadcast_shapes(b0.shape, k.shape, omega.shape)
    except RuntimeError:
        raise ValueError(
            f"b0, k and omega must broadcast together, got shapes {tuple(b0.shape)}, "
            f"{tuple(k.shape)} and {tuple(omega.shape)}"
        ) from None
    if (
        (b0 < 0).any()
        or (k < 0).any()
        or (omega < 0).any()
        or not all(torch.isfinite(v).all() for v in (b0, k, omega))
    ):
        raise ValueError("b0, k and omega must be finite and non-negative")
    L = torch.as_tensor(
        [check_int("depths", x, minimum=0) for x in depth_grid(depths)], dtype=torch.float64
    )
    return b0, k, omega, L


def _power_bound(b0, k, rho, L) -> torch.Tensor:
    """``max(rho^L b0, b~ / sqrt(1 + (15/4) k b~^2 L))``, ``b~ = min(b0, rho / sqrt(3 k))``, with
    ``k b~^2 = min(k b0^2, rho^2 / 3)`` computed without overflow (a huge finite ``k`` gives a tiny
    bound, never NaN)."""
    with torch.no_grad():
        b0, k, rho = torch.broadcast_tensors(b0, k, rho)
        root = torch.sqrt(k)
        cap = torch.where(k > 0, rho / (math.sqrt(3) * torch.where(k > 0, root, 1.0)), math.inf)
        b = torch.minimum(b0, cap).unsqueeze(-1)
        x = torch.minimum((root * b0) ** 2, rho**2 / 3).unsqueeze(-1)  # k b~^2
        power = b / torch.sqrt(1 + STEP * x * L)
        geometric = b0.unsqueeze(-1) * torch.exp(L * torch.log(rho).unsqueeze(-1))
        return torch.maximum(power, torch.nan_to_num(geometric, nan=0.0))


def as_float64(name: str, value) -> torch.Tensor:
    """``value`` (a number, or a tensor, array or sequence of numbers) as a float64 tensor; a
    ``TypeError``
    naming ``name`` for anything else (a string, ``None``, a complex or bool tensor)."""
    if isinstance(value, torch.Tensor):
        check_tensor_kind(name, value)
    elif isinstance(value, (str, bytes, bool)) or value is None:
        raise TypeError(
            f"{name} must be a number or a tensor of numbers, got {type(value).__name__} "
            f"{value!r:.40}"
        )
    try:
        return torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"{name} must be a number or a tensor of numbers, got {type(value).__name__} "
            f"{value!r:.40}"
        ) from None


def depth_grid(depths) -> list:
    if not isinstance(depths, (np.ndarray, torch.Tensor)) and hasattr(depths, "__len__"):
        # a range or a sequence: its length is known before it is turned into an array
        check_elements(
            "depths", len(depths), alternative="evaluate the bound on a coarser grid of depths"
        )
    depths = np.atleast_1d(np.asarray(depths))
    if depths.ndim != 1 or depths.size == 0:
        raise ValueError(
            f"depths must be a non-empty 1-D sequence of depths, got shape {depths.shape}"
        )
    check_elements(
        "depths", depths.size, alternative="evaluate the bound on a coarser grid of depths"
    )
    return [int(x) if float(x) == int(x) else x for x in depths.tolist()]


def _check_skip_attention(model) -> SAN:
    cfg = check_san(model).config
    why = [
        s
        for s, bad in (
            ("skip=True", not cfg.skip),
            ("skip_strength=1", cfg.skip_strength != 1),
            ("mlp=0", cfg.mlp),
            ("layernorm='none'", cfg.layernorm != "none"),
            ("bias=False", cfg.bias),
            ("final_layernorm=False", cfg.final_layernorm),
            ("causal=False", cfg.causal),
            ("window=0", cfg.window),
            ("attention='dot'", cfg.attention != "dot"),
        )
        if bad
    ]
    if why:
        raise ValueError(
            "model must be self-attention with skip connections and nothing else, which is all the "
            f"theorem covers: it needs {', '.join(why)}"
        )
    return model


def lower_bound(model, X) -> torch.Tensor:
    """The theorem's bound for a core ``SAN`` with skips on ``X`` ``(n, d)`` or ``(..., n, d)``:
    ``(L+1, ...)``.

    Entry ``l`` bounds ``||res(X_l)||_inf`` from below, with ``k`` and ``Omega`` the largest over
    the first ``l`` layers. Refused (``ValueError``) outside the theorem: a network with an MLP,
    LayerNorm, biases, a mask or relative attention, or with ``Omega >= 1/2`` in some layer.
    """
    X = _check_skip_attention(model).check_input(X)
    k, omega = layer_constants(model)
    if (omega >= OMEGA_LIMIT).any():
        raise ValueError(
            f"model has Omega = sum_h ||W_h||_inf = {omega.max():.4g} >= 1/2 in some layer: "
            "outside the theorem's regime"
        )
    b0 = residual_inf(X)
    out = [b0]
    for l in range(1, model.config.n_layers + 1):
        out.append(depth_bound(b0, k[:l].max(), omega[:l].max(), [l])[..., 0])
    return torch.stack(out)


def wide_lower_bound(model, X) -> torch.Tensor:
    """:func:`wide_depth_bound` for a core ``SAN`` with skips on ``X`` ``(n, d)`` or ``(..., n,
    d)``: ``(L+1, ...)``, entry ``l`` a lower bound on ``||res(X_l)||_inf`` (``k``, ``Omega`` the
    largest over the first ``l`` layers, ``n`` the number of tokens). Refused (``ValueError``)
    outside the theorem of section 7: anything but attention with skips, or ``Omega >= 1`` in some
    layer."""
    X = _check_skip_attention(model).check_input(X)
    k, omega = layer_constants(model)
    if (omega >= 1).any():
        raise ValueError(
            f"model has Omega = sum_h ||W_h||_inf = {omega.max():.4g} >= 1 in some layer: "
            "outside the theorem's regime (bounded value maps can then cancel the skip)"
        )
    b0, n = residual_inf(X), X.shape[-2]
    out = [b0]
    for l in range(1, model.config.n_layers + 1):
        out.append(wide_depth_bound(b0, k[:l].max(), omega[:l].max(), [l], n)[..., 0])
    return torch.stack(out)


@torch.no_grad()
def one_layer_bound(model, X) -> torch.Tensor:
    """The one-layer lemma, a posteriori: ``b_l (1 - sum_h 2 omega_h tanh(2 eps_h))`` for ``l =
    0..L-1``, ``(L, ...)``.

    ``b_l`` and ``eps_h = max_ij |(R W_QK,h R^T)_ij| / sqrt(d_qk)`` (``R = res(X_l)``) come from the
    forward pass of ``model`` (a core ``SAN`` with skips and nothing else) on ``X``; entry ``l``
    bounds ``b_{l+1}`` from below, whatever the weights (no condition on ``Omega``).
    """
    X = _check_skip_attention(model).check_input(X)
    hidden = model(X).hidden_states
    QK, W = qk_matrices(model), value_matrices(model)
    omega = W.abs().sum(-1).amax(-1)  # (L, H)
    out = []
    for l, Xl in enumerate(hidden[:-1]):
        R = res(Xl)
        E = torch.einsum("...nd,hde,...me->...hnm", R, QK[l], R) / math.sqrt(model.config.d_qk)
        eps = E.abs().amax(dim=(-1, -2))  # (..., H)
        out.append(residual_inf(Xl) * (1 - (2 * omega[l] * torch.tanh(2 * eps)).sum(-1)))
    return torch.stack(out) if out else torch.zeros((0,) + X.shape[:-2], dtype=X.dtype)
