"""Qwen2 (Yang et al. 2024) in the core's types: Llama's layer (:mod:`.llama`: pre-RMSNorm,
rotary positions, grouped-query attention, SiLU-gated MLP, causal mask) with biases on the query,
key and value maps and none on the output or the MLP. Layers with a sliding window
(``layer_types`` "sliding_attention", when ``use_sliding_window``) are not converted.
"""

from __future__ import annotations

from ..network import Network
from . import llama
from .common import transformers_config

__all__ = ["convert"]


def convert(model, name: str, dtype, *, as_transformers: bool = True) -> Network:
    """The :class:`Network` of a transformers ``Qwen2Model``."""
    c = transformers_config(model, "qwen2")
    if "sliding_attention" in (getattr(c, "layer_types", None) or ()):
        raise ValueError("Qwen2 is converted without sliding-window layers (use_sliding_window)")
    cfg = llama.san_config(c, dtype, as_transformers=as_transformers, maps=("q", "k", "v"))
    return llama.network(model, name, cfg)
