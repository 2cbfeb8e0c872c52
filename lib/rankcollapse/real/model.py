"""A real transformer ready to run (:class:`RealModel`): the transformers module, where its
weights and token ids come from, and the model in the core's types (:meth:`RealModel.network`).
:mod:`rankcollapse.real.hub` builds and loads them."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .convert import from_transformers
from .network import Network
from .registry import MODELS
from .text import CLS, SEP

__all__ = ["RealModel", "check_model"]


@dataclass
class RealModel:
    """A real transformer ready to run: the transformers module, and what the book needs to know.

    ``pretrained``: whether the weights are trained ones. ``source``: one line saying where the
    weights and the token ids come from (for captions and prose). ``tokenizer``: ``str ->
    list[int]`` in the model's own vocabulary, or ``None`` when none is available offline (then
    MiniLM's WordPiece ids are mapped into the model's range). :meth:`network` gives the model in
    the core's types (:class:`rankcollapse.real.network.Network`).
    """

    name: str
    family: str
    hf: object = field(repr=False)
    pretrained: bool
    source: str
    tokenizer: object = field(default=None, repr=False)
    cls_sep: tuple = (CLS, SEP)
    position_dtype: object = "auto"
    as_transformers: bool | None = None
    _net: tuple = field(default=(None, None), repr=False)

    def network(self, dtype=torch.float64) -> Network:
        """The converted network in ``dtype`` (the last one built is kept; float32 shares the
        weights).

        ``position_dtype`` (XLNet only): the dtype of the relative positions' sinusoids, ``"auto"``
        for float32 as transformers computes them; ``torch.float64`` computes them exactly.
        ``as_transformers`` (:func:`rankcollapse.real.from_transformers`): the decoders' rotary
        sinusoids, RMSNorm and softmax in float32 as transformers computes them (``None``: yes).
        """
        key = (dtype, self.position_dtype, self.as_transformers)
        if self._net[0] != key:
            net = from_transformers(
                self.hf,
                self.family,
                self.name,
                dtype,
                position_dtype=self.position_dtype,
                as_transformers=self.as_transformers,
            )
            self._net = (key, net)
        return self._net[1]

    @property
    def n_layers(self) -> int:
        return self.network_config().n_layers

    @property
    def n_heads(self) -> int:
        return self.network_config().n_heads

    @property
    def d_model(self) -> int:
        return self.network_config().d_model

    def network_config(self):
        net = self._net[1] if self._net[1] is not None else self.network(torch.float32)
        return net.config

    @property
    def vocab_size(self) -> int:
        return self.hf.get_input_embeddings().weight.shape[0]

    @property
    def max_tokens(self) -> int | None:
        """The longest sequence: the registry's, else the configuration's position table (``None``
        without one: XLNet, or rotary positions with no table in the config)."""
        if self.name in MODELS:
            return MODELS[self.name].max_tokens
        if self.family == "xlnet":
            return None
        return getattr(self.hf.config, "max_position_embeddings", None)

    @property
    def label(self) -> str:
        return f"{self.name} ({'pretrained' if self.pretrained else 'at initialisation'})"


def check_model(model) -> RealModel:
    """``model`` itself if it is a :class:`RealModel`; a ``TypeError`` naming what it is
    otherwise."""
    if not isinstance(model, RealModel):
        raise TypeError(
            "model must be a rankcollapse.real.RealModel (from rc.real.load), "
            f"got {type(model).__name__}"
        )
    return model
