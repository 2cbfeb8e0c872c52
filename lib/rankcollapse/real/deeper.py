"""The weights of a real model's deeper networks (chapter "Skip connections at depth"): its own
layers first, then further layers drawn from their distribution or its layers again
(:func:`deeper_layers`); :mod:`rankcollapse.real.depth` runs them.
"""

from __future__ import annotations

import torch

from .._validate import check_choice, check_int, check_seed, derive_seed

__all__ = ["EXTENSIONS", "native_layers", "deeper_layers", "extension_seed"]

EXTENSIONS = ("draw", "repeat")


def native_layers(net) -> list[dict]:
    """The native layers' weights by the core's names (one dict per layer; shared layers repeat)
    of ``net``, a :class:`rankcollapse.real.Network`."""
    if not hasattr(getattr(net, "san", None), "layers"):
        raise TypeError(f"net must be a rankcollapse.real.Network, got {type(net).__name__}")
    return [{k: v.detach() for k, v in block.weights().items()} for block in net.san.layers]


def deeper_layers(native: list[dict], n_layers: int, extension: str, seed: int):
    """Yield ``n_layers`` layers' weights: the ``native`` ones first, then further layers.

    ``extension="draw"``: each further layer's tensors drawn from a normal of mean 0 and the
    standard deviation of that tensor pooled over the native layers (constant tensors copied), by
    a generator seeded with ``seed``; ``"repeat"``: the native layers again, in order.
    """
    n_layers = check_int("n_layers", n_layers)
    check_choice("extension", extension, EXTENSIONS)
    seed = check_seed("seed", seed)
    if not native:
        raise ValueError("native must hold at least one layer's weights")
    L0 = len(native)
    spread = {}
    for k in native[0]:
        pooled = torch.stack([layer[k] for layer in native]).double()
        spread[k] = None if bool(pooled.min() == pooled.max()) else float(pooled.std())
    gen = torch.Generator().manual_seed(seed)
    for l in range(n_layers):
        if l < L0 or extension == "repeat":
            yield native[l % L0]
            continue
        drawn = {}
        for k, t in native[0].items():
            if spread[k] is None:
                drawn[k] = t
            else:  # float32 (transformers' draws) and contiguous: normal_ in a transposed
                # view's layout is 3 times slower; the same entries whatever the natives' dtype
                drawn[k] = (
                    torch.empty(t.shape, dtype=torch.float32)
                    .normal_(0.0, spread[k], generator=gen)
                    .to(t.dtype)
                )
        yield drawn


def extension_seed(seed: int) -> int:
    """The seed of the further layers' draws of a run of ``seed`` (apart from transformers')."""
    return derive_seed(check_seed("seed", seed), 7919, stride=104729)
