"""A converted network against transformers' own forward: every layer's hidden state, at random
initialisation (the parity tests' measurement, and the reader's check of a converter).

:func:`parity` builds ``family`` with transformers' initialiser (:func:`~rankcollapse.real.
families.transformers_model`), moves the one-dimensional parameters (norm gains, biases: 1 and 0
at initialisation, where a wrong mapping would not show) off their initial values, converts the
model with :func:`~rankcollapse.real.convert.from_transformers` and runs both on the same random
token ids (the causal mask where the model has one), returning each layer's relative error.
"""

from __future__ import annotations

import torch

from .._validate import check_dtype, check_int, check_seed
from .convert import from_transformers
from .families import transformers_model

__all__ = ["parity", "layer_errors"]


def layer_errors(got: torch.Tensor, want: torch.Tensor, key_mask=None) -> list[float]:
    """Per layer: the largest entry error over that layer's largest entry, ``got`` and ``want``
    ``(L + 1, b, n, d)`` (positions where ``key_mask`` ``(b, n)`` is 0 not compared)."""
    if got.shape != want.shape:
        raise ValueError(f"got and want must have one shape, got {got.shape} and {want.shape}")
    if key_mask is not None:
        keep = key_mask.bool()[None, :, :, None]
        got, want = got * keep, want * keep
    scale = want.abs().amax(dim=(1, 2, 3)).clamp_min(1e-300)
    return ((got - want).abs().amax(dim=(1, 2, 3)) / scale).tolist()


@torch.no_grad()
def parity(
    family: str,
    config_overrides=None,
    *,
    seed: int = 0,
    depth_factor: int = 1,
    n_tokens: int = 11,
    batch: int = 2,
    dtype=torch.float64,
    padded: bool = False,
) -> list[float]:
    """The relative error of every hidden state (the embedding's output and each layer's, the
    last after the final norm where the model has one) of ``family``'s converted network
    against transformers' forward (``output_hidden_states=True``), in ``dtype``, on ``batch``
    random sequences of ``n_tokens`` ids (``padded``: the last sequence's final third padded
    out, compared on real tokens only). Computes in float32 where transformers does
    (``as_transformers=True``), so float64 agrees to rounding."""
    seed, dtype = check_seed("seed", seed), check_dtype("dtype", dtype)
    n, b = check_int("n_tokens", n_tokens), check_int("batch", batch)
    hf = transformers_model(family, config_overrides, seed=seed, depth_factor=depth_factor)
    hf = hf.to(dtype)
    gen = torch.Generator().manual_seed(seed + 1)
    for p in hf.parameters():
        if p.ndim == 1:
            p.add_(0.1 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    net = from_transformers(hf, family, family, dtype, as_transformers=True)
    ids = torch.randint(0, net.embedding.vocab_size, (b, n), generator=gen)
    mask = torch.ones(b, n, dtype=torch.long)
    if padded:
        mask[-1, n - n // 3 :] = 0
    kw = {"token_type_ids": torch.zeros_like(ids)} if family in ("bert", "albert") else {}
    out = hf(ids, attention_mask=mask if padded else None, output_hidden_states=True, **kw)
    want = torch.stack(out.hidden_states)
    got = torch.stack(net.san(net.embed(ids), key_mask=mask if padded else None).hidden_states)
    return layer_errors(got, want, mask if padded else None)
