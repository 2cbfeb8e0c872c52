"""The price of a large Lipschitz constant: sensitivity to input changes and gradient variance.

:func:`perturbation_gain` (output change over input change along random directions) and
:func:`gradient_variance` (the spread of per-example gradients of a memorisation task, hence of
mini-batch gradients). :mod:`rankcollapse.lipschitz` brackets the constant itself (and
re-exports these names). Book: chapter "The MLP trade-off", section "The price".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._validate import (
    as_tokens,
    check_choice,
    check_elements,
    check_int,
    check_positive_float,
    check_seed,
)
from .residual import matrix_norm
from .san import SAN, check_san

__all__ = [
    "perturbation_gain",
    "memorization_task",
    "per_example_gradients",
    "GradientNoise",
    "gradient_variance",
]


@torch.no_grad()
def perturbation_gain(
    model: SAN,
    X,
    *,
    eps: float = 1e-4,
    directions: int = 8,
    seed: int = 0,
    relative: bool = True,
    norm: str = "fro",
) -> torch.Tensor:
    """Sensitivity to small input perturbations: output change over input change, per random
    direction.

    For each input ``X`` (``(n, d)`` or ``(b, n, d)``) and each of ``directions`` Gaussian
    directions ``U`` scaled so that ``||Delta|| = eps ||X||``, returns

    - ``relative=True``: :math:`\\dfrac{\\lVert f(X+\\Delta) - f(X)\\rVert / \\lVert
      f(X)\\rVert}{\\lVert\\Delta\\rVert / \\lVert X\\rVert}`, the amplification of a *relative*
      perturbation (scale-free: multiplying the output by a constant does not change it);
    - ``relative=False``: :math:`\\lVert f(X+\\Delta) - f(X)\\rVert / \\lVert\\Delta\\rVert`, which
      grows with any rescaling of the output.

    ``f`` is the whole network's last hidden state; ``norm``: ``"fro"`` (default) or ``"l1inf"``.
    Shape ``(directions,)`` or ``(b, directions)``. Chapter "The MLP trade-off", section "The
    price". A zero input is refused (``||Delta|| = eps ||X||`` would be 0: the gain is 0 / 0), and
    with ``relative=True`` so is an input whose output is zero (a relative change of a zero output).
    """
    check_san(model)
    X = as_tokens("X", X, d=model.config.d_model, dtype=model.config.dtype, max_batch_dims=1)
    eps = check_positive_float("eps", eps)
    directions = check_int("directions", directions)
    seed = check_seed("seed", seed)
    if not isinstance(relative, bool):
        raise TypeError(f"relative must be True or False, got {relative!r}")
    check_choice("norm", norm, ("fro", "l1inf"))
    batched = X.ndim == 3
    Xb = X if batched else X.unsqueeze(0)
    gen = torch.Generator().manual_seed(seed)
    U = torch.randn((Xb.shape[0], directions) + Xb.shape[1:], generator=gen, dtype=Xb.dtype)
    xn = matrix_norm(Xb, norm)[:, None]
    if bool((xn == 0).any()):
        raise ValueError(
            "X is zero (an input of norm 0): the perturbation eps * ||X|| is 0 and the gain 0 / 0; "
            "pass a non-zero input, or relative=False with a perturbation of your own size"
        )
    U = U * (eps * xn / matrix_norm(U, norm))[..., None, None]
    Y = model(Xb).last_hidden_state
    if relative and bool((matrix_norm(Y, norm) == 0).any()):
        raise ValueError(
            "the model's output on X is zero: a relative change of it is undefined (use "
            "relative=False)"
        )
    Yp = model(Xb[:, None] + U).last_hidden_state
    dY = matrix_norm(Yp - Y[:, None], norm)
    dX = matrix_norm(U, norm)
    gain = dY / dX
    if relative:
        gain = gain * xn / matrix_norm(Y, norm)[:, None]
    return gain if batched else gain[0]


def memorization_task(samples: int, n: int, d: int, *, seed: int, dtype=torch.float64):
    """A per-token memorisation task: ``(X, targets, readout)``.

    ``X``: ``(samples, n, d)`` Gaussian tokens; ``targets``: ``(samples, n)`` random signs, one per
    token; ``readout``: a unit vector ``(d,)``. The loss of one sample is
    :math:`\\tfrac12\\,\\mathrm{mean}_i\\,(y_i^\\top r - t_i)^2` with ``y_i`` the network's output
    tokens: telling tokens apart is the whole task, so a collapsed output cannot solve it.
    """
    samples, n, d = check_int("samples", samples), check_int("n", n), check_int("d", d)
    check_elements(
        "samples * n * d", samples * n * d, alternative="draw fewer samples or smaller (n, d)"
    )
    seed = check_seed("seed", seed)
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(samples, n, d, generator=gen, dtype=dtype)
    targets = torch.sign(torch.randn(samples, n, generator=gen, dtype=dtype))
    targets[targets == 0] = 1.0
    r = torch.randn(d, generator=gen, dtype=dtype)
    return X, targets, r / r.norm()


def per_example_gradients(model: SAN, X, targets, readout) -> torch.Tensor:
    """Gradients of the :func:`memorization_task` loss, one per sample, flattened: shape ``(samples,
    P)``.

    ``P`` counts every parameter of ``model`` (shared weights once). The model's own ``.grad``
    fields are left untouched.
    """
    check_san(model)
    X = as_tokens("X", X, d=model.config.d_model, dtype=model.config.dtype, max_batch_dims=1)
    if X.ndim == 2:
        X = X.unsqueeze(0)
    targets = torch.as_tensor(targets, dtype=X.dtype)
    if targets.shape != X.shape[:2]:
        raise ValueError(
            f"targets must have shape {tuple(X.shape[:2])} (samples, n), got {tuple(targets.shape)}"
        )
    readout = torch.as_tensor(readout, dtype=X.dtype)
    if readout.shape != (X.shape[-1],):
        raise ValueError(f"readout must have shape ({X.shape[-1]},), got {tuple(readout.shape)}")
    params = list(model.parameters())
    rows = []
    for x, t in zip(X, targets):
        loss = 0.5 * ((model(x).last_hidden_state @ readout - t) ** 2).mean()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        rows.append(
            torch.cat(
                [
                    (g if g is not None else torch.zeros_like(p)).reshape(-1)
                    for g, p in zip(grads, params)
                ]
            )
        )
    return torch.stack(rows)


@dataclass
class GradientNoise:
    """Spread of per-example gradients ``g_i`` (``samples`` of them).

    variance: :math:`\\mathbb E\\lVert g_i - \\bar g\\rVert^2`, the trace of their covariance; a
    mini-batch of ``B`` samples has gradient variance ``variance / B``. mean_sq_norm:
    :math:`\\lVert\\bar g\\rVert^2`. noise_to_signal: ``variance / mean_sq_norm``, unchanged if the
    loss is rescaled.
    """

    variance: float
    mean_sq_norm: float

    @property
    def noise_to_signal(self) -> float:
        return self.variance / self.mean_sq_norm if self.mean_sq_norm > 0 else math.inf


def gradient_variance(model: SAN, X, targets, readout) -> GradientNoise:
    """The spread of the :func:`memorization_task` gradients over samples (hence over mini-batches).

    Chapter "The MLP trade-off", section "The price".
    """
    G = per_example_gradients(model, X, targets, readout)
    mean = G.mean(dim=0)
    # unbiased: E||g - mean||^2 estimated with samples - 1 degrees of freedom
    var = ((G - mean) ** 2).sum(dim=1).sum() / max(G.shape[0] - 1, 1)
    return GradientNoise(float(var), float(mean.pow(2).sum()))
