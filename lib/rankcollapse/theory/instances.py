"""Random instances of the theorems' hypotheses, for the tests and for measuring the bound's
tightness."""

from __future__ import annotations

import torch

from .._validate import check_int, check_seed, derive_seed
from ..san import SAN, SANConfig

__all__ = ["random_instances"]


MAX_ELEMENTS = 2**25  # batch * max_n * max_d: the largest input drawn (256 MiB in float64)


def random_instances(
    count: int,
    *,
    seed: int,
    batch: int = 10,
    max_n: int = 12,
    max_d: int = 12,
    max_heads: int = 3,
    max_layers: int = 4,
):
    """``count`` random pure-attention instances, yielded as ``(model, X)`` with ``batch`` inputs
    per model.

    ``ceil(count / batch)`` models; each but the last takes ``batch`` inputs, the last the rest,
    so exactly ``count`` inputs in all (``count=15, batch=10``: inputs of shape ``(10, n, d)``
    then ``(5, n', d')``). Each model draws ``n, d`` in ``2..max_n``/``2..max_d``,
    ``1..max_heads`` heads, ``1..max_layers`` layers and an attention weight scale
    (``init_scale``) log-uniform in ``[0.05, 2]``; each input ``X`` of shape ``(b, n, d)`` has
    standard normal entries times a scale log-uniform in ``[0.01, 10]``. Every instance
    satisfies the hypotheses of the collapse bound (a pure attention network, any finite
    weights). A generator: nothing is drawn before it is iterated, but its arguments are
    checked at the call (``batch * max_n * max_d`` at most ``2**25``). Used by the tests and by
    chapter "Pure attention collapses" (how tight the bound is).
    """
    count = check_int("count", count)
    seed = check_seed("seed", seed)
    batch = check_int("batch", batch)
    max_n, max_d = check_int("max_n", max_n, minimum=2), check_int("max_d", max_d, minimum=2)
    max_heads, max_layers = (
        check_int("max_heads", max_heads, maximum=64),
        check_int("max_layers", max_layers, maximum=64),
    )
    if batch * max_n * max_d > MAX_ELEMENTS:
        raise ValueError(
            f"batch * max_n * max_d must be at most {MAX_ELEMENTS} (the input drawn for one "
            "model), "
            f"got {batch} * {max_n} * {max_d}"
        )
    return _draw(count, seed, batch, max_n, max_d, max_heads, max_layers)


def _draw(count, seed, batch, max_n, max_d, max_heads, max_layers):
    g = torch.Generator().manual_seed(seed)
    for i in range(-(-count // batch)):
        b = min(batch, count - i * batch)
        n = int(torch.randint(2, max_n + 1, (1,), generator=g))
        d = int(torch.randint(2, max_d + 1, (1,), generator=g))
        H = int(torch.randint(1, max_heads + 1, (1,), generator=g))
        L = int(torch.randint(1, max_layers + 1, (1,), generator=g))
        s = float(10 ** (torch.rand(1, generator=g) * 1.6 - 1.3))
        xs = 10 ** (torch.rand(b, 1, 1, generator=g, dtype=torch.float64) * 3 - 2)
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=s)
        model = SAN(cfg, seed=derive_seed(seed, i, stride=100_003))
        yield model, torch.randn(b, n, d, generator=g, dtype=torch.float64) * xs
