"""Random instances of the theorems' hypotheses, for the tests and for measuring the bound's tightness."""

from __future__ import annotations

import torch

from .._validate import check_int
from ..san import SAN, SANConfig

__all__ = ["random_instances"]


def random_instances(count: int, *, seed: int, batch: int = 10, max_n: int = 12, max_d: int = 12,
                     max_heads: int = 3, max_layers: int = 4):
    """``count`` random pure-attention instances ``(model, X)``, as ``count // batch`` models with ``batch`` inputs each.

    Each model draws ``n, d`` in ``2..max_n``/``2..max_d``, ``1..max_heads`` heads, ``1..max_layers``
    layers and an attention weight scale (``init_scale``) log-uniform in ``[0.05, 2]``; each input
    ``X`` of shape ``(batch, n, d)`` has standard normal entries times a scale log-uniform in
    ``[0.01, 10]``. Every instance satisfies the hypotheses of Theorems 2.2/2.3 (a pure attention
    network, any finite weights). Used by the tests and by chapter "Pure attention collapses"
    (how tight the bound is).
    """
    count = check_int("count", count)
    seed = check_int("seed", seed, minimum=0)
    batch = check_int("batch", batch)
    g = torch.Generator().manual_seed(seed)
    for i in range(max(1, count // batch)):
        n = int(torch.randint(2, max_n + 1, (1,), generator=g))
        d = int(torch.randint(2, max_d + 1, (1,), generator=g))
        H = int(torch.randint(1, max_heads + 1, (1,), generator=g))
        L = int(torch.randint(1, max_layers + 1, (1,), generator=g))
        s = float(10 ** (torch.rand(1, generator=g) * 1.6 - 1.3))
        xs = 10 ** (torch.rand(batch, 1, 1, generator=g, dtype=torch.float64) * 3 - 2)
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=s)
        model = SAN(cfg, seed=(seed * 100_003 + i) % (2**62))
        yield model, torch.randn(batch, n, d, generator=g, dtype=torch.float64) * xs
