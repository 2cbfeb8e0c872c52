"""Rank collapse starves the queries and keys of gradient (Noci et al. 2022), measured at
initialisation.

Noci et al. ("Signal propagation in transformers: theoretical perspectives and the role of rank
collapse", NeurIPS 2022) state in their abstract that rank collapse of the tokens at
initialisation makes the gradients of the queries and keys vanish, and that a depth-dependent
scaling of the residual branches prevents it. The mechanism is the softmax's: when the tokens
entering a layer are all equal, every key gives query ``i`` the same score, and a change of
``W_Q`` or ``W_K`` moves a whole row of scores by the same amount, which the softmax ignores;
the values' gradient does not vanish.

This module measures, layer by layer, the Frobenius norm of the gradient of a loss with respect
to every layer's ``W_Q``, ``W_K`` and ``W_V`` in three networks built from one
:class:`rankcollapse.san.SAN` (pure attention, no MLP, no LayerNorm):

- ``"pure"``: :math:`X_{l+1} = \\mathrm{SA}_l(X_l)` (the paper's collapse);
- ``"skip"``: :math:`X_{l+1} = X_l + \\mathrm{SA}_l(X_l)`;
- ``"scaled"``: :math:`X_{l+1} = X_l + L^{-1/2}\\,\\mathrm{SA}_l(X_l)`, the residual branch scaled
  by
  :math:`1/\\sqrt{L}`. The abstract says "depth-dependent scaling"; :math:`1/\\sqrt{L}` is the
  book's choice of one (the scaling that keeps the sum of ``L`` independent branches of bounded
  variance), not a constant read from the paper.

The loss is linear, :math:`\\langle G, X_L\\rangle` with ``G`` a fixed random ``(n, d)`` matrix:
its gradient is what any loss's would be at a point where ``dLoss/dX_L = G``. Above the core
(it imports ``residual``, ``san`` and ``stats``). The result object returns numbers
(:meth:`GradientStudy.summary`); the sentences that state them are the chapter's. Book: chapter
"After the paper", section 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import (
    as_tokens,
    check_bool,
    check_generator,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from ..residual import relative_residual
from ..san import SAN, SANConfig, check_san
from ..stats import first_below, geometric_mean

__all__ = [
    "ARCHITECTURES",
    "FLOOR",
    "VANISHED",
    "branch_states",
    "layer_gradients",
    "GradientStudy",
    "gradient_study",
]

ARCHITECTURES = ("pure", "skip", "scaled")
FLOOR = 1e-300  # a gradient norm of exactly 0 counts as this in a geometric mean
VANISHED = 1e-6  # a query/value gradient ratio below this has vanished


def _check_pure(model) -> SAN:
    cfg = check_san(model).config
    extra = [
        name
        for name, on in (
            ("mlp", cfg.mlp),
            ("layernorm", cfg.layernorm != "none"),
            ("bias", cfg.bias),
            ("final_layernorm", cfg.final_layernorm),
        )
        if on
    ]
    if extra:
        raise ValueError(
            f"model must be attention only (no {', '.join(extra)}): the skip and its scale are "
            "set here, not in the config"
        )
    return model


def branch_states(model, X, *, skip: bool, branch_scale: float = 1.0):
    """The token matrices of ``model``'s attention layers run as
    :math:`X_{l+1} = X_l + a\\,\\mathrm{SA}_l(X_l)` (``skip=True``, ``a = branch_scale``) or
    :math:`X_{l+1} = \\mathrm{SA}_l(X_l)` (``skip=False``, ``branch_scale`` ignored), with autograd
    kept. Returns ``(hidden, attentions)``: ``L + 1`` tensors ``(..., n, d)`` and ``L`` tensors
    ``(..., H, n, n)``.

    ``model``: an attention-only :class:`~rankcollapse.san.SAN` (its ``skip`` flag is ignored,
    ``skip`` replaces it); ``X``: ``(..., n, d)``. The same weights run under the config's
    ``skip`` and ``branch_scale`` (:meth:`~rankcollapse.san.SAN.replace`); scaling the branch by
    ``a`` equals scaling every ``W_O`` by ``a``.
    """
    model = _check_pure(model)
    skip = check_bool("skip", skip)
    a = check_positive_float("branch_scale", branch_scale, allow_zero=True)
    out = model.replace(skip=skip, skip_strength=1.0, branch_scale=a if skip else 1.0)(X)
    return out.hidden_states, out.attentions


def layer_gradients(model, X, G, *, skip: bool, branch_scale: float = 1.0) -> dict:
    """Per-layer gradient norms of the loss :math:`\\langle G, X_L\\rangle` (:func:`branch_states`).

    ``X``, ``G``: ``(n, d)``. Returns numpy arrays of shape ``(L,)``: ``"query"``, ``"key"``,
    ``"value"`` (Frobenius norms of the gradient with respect to layer ``l``'s ``W_Q``, ``W_K``,
    ``W_V``, all heads together), ``"residual"`` (the relative residual of layer ``l``'s input
    :math:`X_{l-1}`) and ``"max_attention"`` (the largest attention weight of each row, averaged
    over rows and heads: 1 when the softmax has saturated). With a shared model each layer's
    entry is the whole gradient of the shared weights.
    """
    model = _check_pure(model)
    X = as_tokens("X", X, d=model.config.d_model, dtype=model.config.dtype, max_batch_dims=0)
    G = as_tokens("G", G, d=model.config.d_model, dtype=model.config.dtype, max_batch_dims=0)
    if G.shape != X.shape:
        raise ValueError(f"G must have the shape of X {tuple(X.shape)}, got {tuple(G.shape)}")
    if model.config.n_layers == 0:
        raise ValueError(
            "model must have at least one layer (n_layers >= 1): a network of depth 0 has no "
            "weights"
        )
    hidden, attentions = branch_states(model, X, skip=skip, branch_scale=branch_scale)
    loss = (G * hidden[-1]).sum()
    params = [p for block in model.layers for p in (block.W_Q, block.W_K, block.W_V)]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    norm = lambda g: 0.0 if g is None else float(g.norm())  # noqa: E731  (depth 0 of a shared model)
    L = len(model.layers)
    with torch.no_grad():
        out = {
            name: np.array([norm(grads[3 * l + i]) for l in range(L)])
            for i, name in enumerate(("query", "key", "value"))
        }
        out["residual"] = np.array([float(relative_residual(h.detach())) for h in hidden[:-1]])
        out["max_attention"] = np.array([float(P.detach().amax(-1).mean()) for P in attentions])
    return out


def _setting(arch: str, n_layers: int):
    return {"pure": (False, 1.0), "skip": (True, 1.0), "scaled": (True, 1.0 / math.sqrt(n_layers))}[
        arch
    ]


@dataclass
class GradientStudy:
    """Gradient norms against depth (section 1): ``curves[arch][quantity]`` is ``(samples, L)``
    for ``arch`` in :data:`ARCHITECTURES` and the quantities of :func:`layer_gradients`."""

    curves: dict
    n_layers: int
    samples: int

    @property
    def layers(self) -> np.ndarray:
        """The layer numbers ``1..L``."""
        return np.arange(1, self.n_layers + 1)

    def typical(self, arch: str, quantity: str) -> np.ndarray:
        """The geometric mean over networks of ``quantity`` (or ``"query/value"``, ``"key/value"``:
        the ratio per network), ``(L,)``."""
        c = self.curves[arch]
        if "/" in quantity:
            top, bottom = quantity.split("/")
            return geometric_mean(
                np.clip(c[top], FLOOR, None) / np.clip(c[bottom], FLOOR, None), floor=FLOOR
            )
        return geometric_mean(c[quantity], floor=FLOOR)

    def summary(self) -> dict:
        """The numbers section 1 states, as floats (ratios are geometric means over networks, per
        :meth:`typical`; a ratio of exactly 0 reads :data:`FLOOR`):

        ``depth`` and ``branch_scale`` (``1/sqrt(L)``); for pure attention ``qv_pure_first`` and
        ``qv_pure_last`` (query/value gradient ratio at layer 1 and ``L``), ``kv_pure_last`` (keys),
        ``vanished_layer`` (the first layer, counted from 1, whose query/value ratio is below
        :data:`VANISHED`; ``None`` if none), ``res_at_vanished`` (the relative residual of that
        layer's input; ``nan`` if none), ``res_pure_last`` (of layer ``L``'s input) and
        ``value_pure_last`` (the value gradient at layer ``L`` over that at layer 1); for skips
        ``qv_skip_first``, ``qv_skip_last``, ``res_skip_first``, ``res_skip_last`` and
        ``att_skip_last`` (the largest attention weight at layer ``L``); for scaled branches
        ``qv_scaled_min`` and ``kv_scaled_min`` (the smallest ratio over the layers),
        ``res_scaled_min`` and ``att_scaled_last``.
        """
        pure, skip, scaled = (self.typical(a, "query/value") for a in ARCHITECTURES)
        res = {a: self.typical(a, "residual") for a in ARCHITECTURES}
        value = self.typical("pure", "value")
        gone = first_below(pure, VANISHED)
        return dict(
            depth=self.n_layers,
            branch_scale=1 / math.sqrt(self.n_layers),
            qv_pure_first=float(pure[0]),
            qv_pure_last=float(pure[-1]),
            kv_pure_last=float(self.typical("pure", "key/value")[-1]),
            vanished_layer=None if gone is None else int(gone) + 1,
            res_at_vanished=float("nan") if gone is None else float(res["pure"][gone]),
            res_pure_last=float(res["pure"][-1]),
            value_pure_last=float(value[-1] / value[0]),
            qv_skip_first=float(skip[0]),
            qv_skip_last=float(skip[-1]),
            res_skip_first=float(res["skip"][0]),
            res_skip_last=float(res["skip"][-1]),
            att_skip_last=float(self.typical("skip", "max_attention")[-1]),
            qv_scaled_min=float(scaled.min()),
            kv_scaled_min=float(self.typical("scaled", "key/value").min()),
            res_scaled_min=float(res["scaled"].min()),
            att_scaled_last=float(self.typical("scaled", "max_attention")[-1]),
        )


def gradient_study(
    *, n_layers: int, n_heads: int, d_model: int, n_tokens: int, samples: int, seed: int, generator
) -> GradientStudy:
    """``samples`` networks (seeds ``seed + s``, the usual initialisation) of depth ``n_layers``,
    each run as the three :data:`ARCHITECTURES` on the same input ``X`` and loss direction ``G``
    (standard
    normal ``(n_tokens, d_model)``, drawn from ``generator``, a chapter's
    ``run.stream().generator``)."""
    n_layers, n_heads, d_model = (
        check_int("n_layers", n_layers),
        check_int("n_heads", n_heads),
        check_int("d_model", d_model),
    )
    n_tokens, samples, seed = (
        check_int("n_tokens", n_tokens, minimum=2),
        check_int("samples", samples),
        check_seed("seed", seed),
    )
    check_generator("generator", generator)
    cfg = SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model)
    rows = {a: [] for a in ARCHITECTURES}
    for s in range(samples):
        model = SAN(cfg, seed=derive_seed(seed, s))
        X = torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        G = torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        for arch in ARCHITECTURES:
            skip, a = _setting(arch, n_layers)
            rows[arch].append(layer_gradients(model, X, G, skip=skip, branch_scale=a))
    curves = {a: {k: np.array([r[k] for r in rows[a]]) for k in rows[a][0]} for a in ARCHITECTURES}
    return GradientStudy(curves, n_layers, samples)
