"""Real transformers in the core's types: a Hugging Face model becomes a
:class:`~rankcollapse.real.network.Network` (an embedding and a :class:`~rankcollapse.san.SAN`).

As TransformerLens keeps one network type and one small converter per architecture, each
family's module (:mod:`.bert`, :mod:`.albert`, :mod:`.xlnet`, :mod:`.gpt2`) maps its state dict
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
from . import albert, bert, gpt2, xlnet

__all__ = ["CONVERTERS", "from_transformers"]

#: family -> its converter ``convert(model, name, dtype) -> Network``
CONVERTERS = {
    "bert": bert.convert,
    "albert": albert.convert,
    "xlnet": xlnet.convert,
    "gpt2": gpt2.convert,
}


def from_transformers(
    model, family: str, name: str, dtype=torch.float64, *, position_dtype="auto"
) -> Network:
    """The :class:`Network` of a transformers ``model`` of ``family`` (``"bert"``, ``"albert"``,
    ``"xlnet"``, ``"gpt2"``) in ``dtype``. float32 weights of a float32 model are shared, not
    copied.

    ``position_dtype`` (XLNet): the dtype of its relative positions' sinusoids; ``"auto"`` is
    float32, as transformers computes them (needed to match it to 1e-10 in float64).
    """
    check_choice("family", family, tuple(CONVERTERS))
    if family == "xlnet":
        pdt = torch.float32 if position_dtype == "auto" else position_dtype
        return xlnet.convert(model, name, dtype, pdt)
    return CONVERTERS[family](model, name, dtype)
