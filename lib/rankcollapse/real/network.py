"""A real transformer in the core's types: an :class:`Embedding` and a
:class:`~rankcollapse.san.SAN`.

The embeddings stay outside the SAN: an :class:`Embedding` computes the SAN's input ``X`` from
token ids (word + position + token-type rows and the embedding LayerNorm for BERT; ALBERT's
128 -> 768 projection; GPT-2's ``wte + wpe``; XLNet's word rows only, its positions entering
every layer's attention). A :class:`Network` holds both and builds the ablations
(:mod:`rankcollapse.real.ablation`) as SANs sharing its weights. The converters of
:mod:`rankcollapse.real.convert` build it from a transformers model.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_bool
from ..ops import layer_norm_sigma
from ..san import SAN, SANConfig, check_san
from .ablation import ablation_config, reshaped_config, shared_san

__all__ = ["Embedding", "Network"]


class Embedding(nn.Module):
    """Token ids ``(..., n)`` to the SAN's input ``X`` ``(..., n, d)``.

    ``X = word[ids] + token_type[types] + position[:n]`` (each table optional), then a LayerNorm
    (``ln`` = ``(gain, shift, eps)``) and a projection ``X W + b`` (``proj``), when given.
    """

    def __init__(self, word, *, position=None, token_type=None, ln=None, proj=None):
        super().__init__()
        self.word = word
        self.position, self.token_type, self.ln, self.proj = position, token_type, ln, proj

    @property
    def vocab_size(self) -> int:
        return self.word.shape[0]

    def forward(self, ids: torch.Tensor, token_types=None) -> torch.Tensor:
        x = self.word[ids]
        if self.token_type is not None:
            x = x + (self.token_type[0] if token_types is None else self.token_type[token_types])
        if self.position is not None:
            x = x + self.position[: ids.shape[-1]]
        if self.ln is not None:
            x = layer_norm_sigma(x, *self.ln)[0]
        if self.proj is not None:
            x = x @ self.proj[0] + self.proj[1]
        return x


class Network:
    """A real transformer in the core's types: an :class:`Embedding` and a
    :class:`~rankcollapse.san.SAN`.

    ``san`` is the full model; :meth:`ablate` returns the variants as SANs sharing its weights.
    ``paper_identity_mlp``: the official code removed this family's MLP by identity maps (ALBERT).
    """

    def __init__(
        self, name: str, embedding: Embedding, san: SAN, *, paper_identity_mlp: bool = False
    ):
        self.name, self.embedding, self.san = name, embedding, check_san(san)
        self.paper_identity_mlp = paper_identity_mlp
        self._ablated = {("full", "clean"): san, ("full", "paper"): san}

    @property
    def config(self) -> SANConfig:
        return self.san.config

    def embed(self, ids: torch.Tensor, token_types=None) -> torch.Tensor:
        """The first layer's input ``X`` ``(..., n, d)`` from token ids ``(..., n)``."""
        return self.embedding(ids, token_types)

    def ablate(
        self,
        variant: str = "full",
        surgery: str = "clean",
        *,
        mask: bool = True,
        bias: bool = True,
        placement: str | None = None,
        branch_scale: float | str = 1.0,
    ) -> SAN:
        """``variant`` under ``surgery`` as a SAN whose parameters are this network's own (shared).

        ``mask=False`` drops the model's causal mask (the decoders'; the encoders have none);
        ``bias=False`` drops every bias of the attention and MLP maps. ``placement`` (``"pre"``,
        ``"post"``) moves the norms the variant keeps; ``branch_scale`` scales both residual
        branches (``"depth"``: ``1/sqrt(L)``): :func:`~rankcollapse.real.ablation.reshaped_config`.
        """
        mask, bias = check_bool("mask", mask), check_bool("bias", bias)
        key = (variant, surgery) if mask and bias else (variant, surgery, mask, bias)
        if placement is not None or branch_scale != 1:
            key = (*key, placement, branch_scale)
        if key not in self._ablated:
            cfg, identity = ablation_config(
                self.config, variant, surgery, identity_mlp=self.paper_identity_mlp
            )
            cfg = cfg.replace(causal=cfg.causal and mask, bias=cfg.bias and bias)
            cfg = reshaped_config(cfg, placement, branch_scale)
            self._ablated[key] = shared_san(self.san, cfg, identity)
        return self._ablated[key]

    def __call__(
        self, ids, key_mask=None, variant: str = "full", surgery: str = "clean", token_types=None
    ):
        """The :class:`~rankcollapse.san.SANOutput` of ``variant`` on token ids ``(b, n)``."""
        return self.ablate(variant, surgery)(self.embed(ids, token_types), key_mask=key_mask)
