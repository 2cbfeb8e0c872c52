"""The circle toy: one trained attention layer applied again and again to a pair of points.

The official ``run_circle.py`` trains a one-layer network to map two points of a circle to the
next two, then feeds its output back as its input: depth is the number of applications, the
weights shared by every "layer" (as ALBERT shares them). Pure attention pulls the two points
together (rank collapse: the two rows of the 2 x 2 point matrix become equal); the chapter
"Which paths do trained networks use?" compares it with skip connections and with an MLP.
"""

from __future__ import annotations

import torch

from .._validate import check_int

__all__ = ["rollout"]


@torch.no_grad()
def rollout(model, X0: torch.Tensor, steps: int) -> torch.Tensor:
    """``steps`` applications of ``model`` to the points ``X0`` ``(n, 2)``: a tensor
    ``(steps + 1, n, 2)`` whose entry ``t`` is ``X_t``, ``X_{t+1} = model(X_t)``, computed in the
    model's dtype."""
    steps = check_int("steps", steps, minimum=0)
    X = X0.to(model.dtype)
    out = [X]
    for _ in range(steps):
        X = model(X)
        out.append(X)
    return torch.stack(out)
