"""Real transformers in the core's types: a Hugging Face model becomes a
:class:`~rankcollapse.real.network.Network` (an embedding and a :class:`~rankcollapse.san.SAN`).

As TransformerLens keeps one network type and one small converter per architecture, each
family's module (:mod:`.bert`, :mod:`.albert`, :mod:`.xlnet`, :mod:`.gpt2`, :mod:`.llama`,
:mod:`.gpt_neox`, :mod:`.qwen2`) maps its state dict
onto :meth:`rankcollapse.san.SAN.from_weights` (heads split out of the fused projections,
LayerNorm ``eps``, activation, biases, shared weights, masks), with the helpers of
:mod:`.common`, so that everything the core computes (beta, gamma, the path decomposition, the
Lipschitz bounds) reads a real model's weights with no second implementation.
:func:`from_transformers` is the one dispatch. The ablations are in
:mod:`rankcollapse.real.ablation`.
"""

from __future__ import annotations

import torch

from ..._validate import check_choice
from ..network import Network
from . import albert, bert, gpt2, gpt_neox, llama, qwen2, xlnet

__all__ = ["CONVERTERS", "from_transformers"]

#: family -> its converter ``convert(model, name, dtype) -> Network``
CONVERTERS = {
    "bert": bert.convert,
    "albert": albert.convert,
    "xlnet": xlnet.convert,
    "gpt2": gpt2.convert,
    "llama": llama.convert,
    "gpt_neox": gpt_neox.convert,
    "qwen2": qwen2.convert,
}


def from_transformers(
    model,
    family: str,
    name: str,
    dtype=torch.float64,
    *,
    position_dtype="auto",
    as_transformers: bool | None = None,
) -> Network:
    """The :class:`Network` of a transformers ``model`` of ``family`` (``"bert"``, ``"albert"``,
    ``"xlnet"``, ``"gpt2"``, ``"llama"``, ``"gpt_neox"``, ``"qwen2"``) in ``dtype``. float32
    weights of a float32 model are shared, not copied.

    ``as_transformers``: compute in float32 what transformers computes in float32 whatever the
    model's dtype (XLNet's relative positions; the decoders' rotary sinusoids, RMSNorm and
    softmax), needed to match it to 1e-10 in float64; ``None`` (default) is ``True``, except
    that XLNet's ``position_dtype`` (``"auto"``: float32) decides for XLNet when it is given.
    """
    check_choice("family", family, tuple(CONVERTERS))
    exact = True if as_transformers is None else as_transformers
    if family == "xlnet":
        if position_dtype == "auto":
            position_dtype = torch.float32 if exact else dtype
        return xlnet.convert(model, name, dtype, position_dtype)
    if family in ("llama", "gpt_neox", "qwen2"):
        return CONVERTERS[family](model, name, dtype, as_transformers=exact)
    return CONVERTERS[family](model, name, dtype)
