"""Ablations of a converted real transformer: the core's own switches on its SAN.

:meth:`rankcollapse.real.network.Network.ablate` builds each variant from
:func:`ablation_config` (the variant's :class:`~rankcollapse.san.SANConfig`) and
:func:`shared_san` (a SAN of that configuration holding the full network's own parameters). For
one layer with input ``x``, attention sub-layer ``a(x)`` (heads, value and output maps, biases)
and MLP ``m`` of a post-LN model (BERT, ALBERT, XLNet):

========  ==========================================  =======================
variant   surgery "paper"                             surgery "clean"
========  ==========================================  =======================
full      ``y = LN(x + a(x))``, ``LN(y + m(y))``      the same
san       ``LN(a(x))``                                ``a(x)``
san+mlp   ``y = LN(a(x))``, ``LN(y + m(y))``          ``m(a(x))``
san+skip  ``LN(x + a(x))``                            ``x + a(x)``
========  ==========================================  =======================

and for ALBERT under "paper", ``san`` is ``y = LN(a(x))``, ``LN(y + gelu(y))`` and ``san+skip``
is ``y = LN(x + a(x))``, ``LN(y + gelu(y))``. "paper" is what the official code's module swaps
computed (Dong et al. 2021's repository, rewritten for transformers 5): its "SAN" keeps the
post-attention LayerNorm, its "SAN+MLP" keeps the MLP's own skip connection, and its ALBERT with
the MLP "removed" still applies the activation, a skip and a LayerNorm (the code set the two
linear maps to the identity, not the sub-layer: here an MLP whose weights are identity matrices).
"clean" removes exactly what the variant's name says, LayerNorms included: it is the theorem's
model. The book shows both because the paper's Figure 2 was measured with the first and its
theorems are about the second. For a pre-LN model (GPT-2) the same rules read: "paper" keeps every
LayerNorm (``a(LN(x))``, the final LayerNorm) and the MLP's skip; "clean" removes them all.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validate import check_choice
from ..san import SAN, Block, SANConfig
from .registry import SURGERIES, VARIANTS

__all__ = ["ablation_config", "shared_san", "reshaped_config"]


def ablation_config(config: SANConfig, variant: str, surgery: str, *, identity_mlp: bool = False):
    """The :class:`SANConfig` of ``variant`` under ``surgery`` (see the module's table), and
    whether its MLP is the identity-weight stand-in of the official ALBERT code (``identity_mlp``:
    the family's paper surgery replaced the MLP's linear maps, not the sub-layer)."""
    check_choice("variant", variant, VARIANTS)
    check_choice("surgery", surgery, SURGERIES)
    if variant == "full":
        return config, False
    skip = variant == "san+skip"
    if surgery == "clean":
        mlp = config.mlp if variant == "san+mlp" else 0
        return config.replace(
            skip=skip, mlp=mlp, mlp_skip=None, layernorm="none", final_layernorm=False
        ), False
    if variant == "san+mlp":
        return config.replace(skip=False, mlp_skip=True), False
    if identity_mlp:
        return config.replace(skip=skip, mlp=config.d_model, mlp_skip=True), True
    return config.replace(skip=skip, mlp=0, mlp_skip=None), False


def shared_san(full: SAN, cfg: SANConfig, identity_mlp: bool = False) -> SAN:
    """A SAN of ``cfg`` holding ``full``'s parameters (the ones ``cfg`` has), or identity MLP
    maps (``identity_mlp``)."""
    if not isinstance(full, SAN):
        raise TypeError(f"full must be a rankcollapse.san.SAN, got {type(full).__name__}")
    if not isinstance(cfg, SANConfig):
        raise TypeError(f"cfg must be a rankcollapse.san.SANConfig, got {type(cfg).__name__}")
    wanted = list(Block(cfg, None).weights())  # the names cfg's layers have (empty tensors)
    eye = None
    if identity_mlp:
        d, dt = cfg.d_model, cfg.dtype
        eye = {
            "W_1": torch.eye(d, dtype=dt),
            "W_2": torch.eye(d, dtype=dt),
            "b_1": torch.zeros(d, dtype=dt),
            "b_2": torch.zeros(d, dtype=dt),
        }
        eye = {k: nn.Parameter(v, requires_grad=False) for k, v in eye.items()}
    layers = []
    for block in dict.fromkeys(full.layers):
        own = block.weights()
        layers.append({k: (eye[k] if eye is not None and k in eye else own[k]) for k in wanted})
    final = full.final_norm_weights() if cfg.final_layernorm else None
    return SAN.from_weights(cfg, layers, final)


def reshaped_config(config: SANConfig, placement=None, branch_scale=1.0) -> SANConfig:
    """``config`` with its norms moved to ``placement`` (``"pre"`` or ``"post"``; ``None``: where
    they are) and both residual branches scaled by ``branch_scale`` (a number ``>= 0``, or
    ``"depth"``: ``1/sqrt(L)``, Noci et al. 2022's depth scaling): ``X + s SA(X)`` and ``Y + s
    MLP(Y)``. The weights are the same; a placement needs a configuration that kept its norms."""
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a rankcollapse SANConfig, got {type(config).__name__}")
    if placement is not None:
        check_choice("placement", placement, ("pre", "post"))
        if config.layernorm == "none":
            raise ValueError(
                f"placement={placement!r} needs norms, and this variant has none (the clean "
                "surgery removes them: use the full network or surgery='paper')"
            )
        config = config.replace(layernorm=placement)
    if isinstance(branch_scale, str):
        check_choice("branch_scale", branch_scale, ("depth",))
        branch_scale = 1 / math.sqrt(max(config.n_layers, 1))
    if branch_scale != 1:
        config = config.replace(branch_scale=branch_scale, mlp_branch_scale=branch_scale)
    return config
