"""Real transformers in the core's types: a Hugging Face model becomes an embedding and a :class:`~rankcollapse.san.SAN`.

As TransformerLens keeps one network type and one small converter per architecture, this module
maps each family's state dict onto :meth:`rankcollapse.san.SAN.from_weights` (heads split out of
the fused projections, LayerNorm ``eps``, activation, biases, shared weights, masks), so that
everything the core computes (beta, gamma, the path decomposition, the Lipschitz bounds) reads a
real model's weights with no second implementation. The embeddings stay outside the SAN: an
:class:`Embedding` computes the SAN's input ``X`` from token ids (word + position + token-type
rows and the embedding LayerNorm for BERT; ALBERT's 128 -> 768 projection; GPT-2's ``wte + wpe``;
XLNet's word rows only, its positions entering every layer's attention).

**Ablations** are the core's own switches on the converted network (:meth:`Network.ablate`), for
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

import torch
from torch import nn

from .._validate import check_bool, check_choice
from ..ops import layer_norm_sigma
from ..san import SAN, Block, SANConfig, check_san
from .registry import SURGERIES, VARIANTS

__all__ = ["Embedding", "Network", "ablation_config", "from_transformers", "ACTIVATION_NAMES"]

# transformers' activation names -> the core's
ACTIVATION_NAMES = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}


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


class Network:
    """A real transformer in the core's types: an :class:`Embedding` and a :class:`~rankcollapse.san.SAN`.

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
        self, variant: str = "full", surgery: str = "clean", *, mask: bool = True, bias: bool = True
    ) -> SAN:
        """``variant`` under ``surgery`` as a SAN whose parameters are this network's own (shared).

        ``mask=False`` drops the model's causal mask (GPT-2's; the other models have none);
        ``bias=False`` drops the query, key, value, output and MLP biases.
        """
        mask, bias = check_bool("mask", mask), check_bool("bias", bias)
        key = (variant, surgery) if mask and bias else (variant, surgery, mask, bias)
        if key not in self._ablated:
            cfg, identity = ablation_config(
                self.config, variant, surgery, identity_mlp=self.paper_identity_mlp
            )
            cfg = cfg.replace(causal=cfg.causal and mask, bias=cfg.bias and bias)
            self._ablated[key] = _share(self.san, cfg, identity)
        return self._ablated[key]

    def __call__(
        self, ids, key_mask=None, variant: str = "full", surgery: str = "clean", token_types=None
    ):
        """The :class:`~rankcollapse.san.SANOutput` of ``variant`` on token ids ``(b, n)``."""
        return self.ablate(variant, surgery)(self.embed(ids, token_types), key_mask=key_mask)


def _share(full: SAN, cfg: SANConfig, identity_mlp: bool) -> SAN:
    """A SAN of ``cfg`` holding ``full``'s parameters (the ones ``cfg`` has), or identity MLP maps."""
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
    final = {"gain": full.lnf_gain, "shift": full.lnf_shift} if cfg.final_layernorm else None
    return SAN.from_weights(cfg, layers, final)


# ------------------------------------------------------------------------- from transformers


def _p(t: torch.Tensor, dtype) -> nn.Parameter:
    """A parameter holding ``t`` in ``dtype`` (no copy when it already has that dtype)."""
    return nn.Parameter(t.detach().to(dtype), requires_grad=False)


def _heads_in(w_t: torch.Tensor, H: int) -> torch.Tensor:
    """``(d, H*dh)`` (input features by head-major outputs) to ``(H, d, dh)``."""
    d = w_t.shape[0]
    return w_t.reshape(d, H, -1).permute(1, 0, 2)


def _attention_weights(q, k, v, o, biases, H, dtype):
    """The core's names for one layer's attention: ``q, k, v`` ``(d, H*dh)``, ``o`` ``(H*dh, d)``."""
    w = {
        "W_Q": _heads_in(q, H),
        "W_K": _heads_in(k, H),
        "W_V": _heads_in(v, H),
        "W_O": o.reshape(H, -1, o.shape[-1]),
    }
    bq, bk, bv, bo = biases
    w.update(b_Q=bq.reshape(H, -1), b_K=bk.reshape(H, -1), b_V=bv.reshape(H, -1), b_O=bo)
    return {k: _p(t, dtype) for k, t in w.items()}


def _ln_weights(prefix, ln, dtype):
    return {f"{prefix}_gain": _p(ln.weight, dtype), f"{prefix}_shift": _p(ln.bias, dtype)}


def _linear(lin, dtype):
    return _p(lin.weight.T, dtype), _p(lin.bias, dtype)


def activation_of(name: str) -> str:
    """The core's activation for transformers' ``name`` (a ``ValueError`` for one it has not)."""
    if name not in ACTIVATION_NAMES:
        raise ValueError(
            f"activation {name!r} has no counterpart in rankcollapse.san (known: {sorted(ACTIVATION_NAMES)})"
        )
    return ACTIVATION_NAMES[name]


def _bert_layer(layer, H, dtype, albert=False):
    att = layer.attention if albert else layer.attention.self
    out = layer.attention.dense if albert else layer.attention.output.dense
    lin = [m.weight.T for m in (att.query, att.key, att.value, out)]
    w = _attention_weights(*lin, [m.bias for m in (att.query, att.key, att.value, out)], H, dtype)
    ffn, ffn_out = (
        (layer.ffn, layer.ffn_output) if albert else (layer.intermediate.dense, layer.output.dense)
    )
    w["W_1"], w["b_1"] = _linear(ffn, dtype)
    w["W_2"], w["b_2"] = _linear(ffn_out, dtype)
    w.update(
        _ln_weights(
            "ln1", layer.attention.LayerNorm if albert else layer.attention.output.LayerNorm, dtype
        )
    )
    w.update(
        _ln_weights("ln2", layer.full_layer_layer_norm if albert else layer.output.LayerNorm, dtype)
    )
    return w


def _bert(model, dtype, albert=False) -> Network:
    c = model.config
    H = c.num_attention_heads
    cfg = SANConfig(
        n_layers=c.num_hidden_layers,
        n_heads=H,
        d_model=c.hidden_size,
        skip=True,
        mlp=c.intermediate_size,
        activation=activation_of(c.hidden_act),
        layernorm="post",
        bias=True,
        ln_eps=c.layer_norm_eps,
        dtype=dtype,
        shared=albert and c.num_hidden_groups == 1,
    )
    emb = model.embeddings
    proj = _linear(model.encoder.embedding_hidden_mapping_in, dtype) if albert else None
    embedding = Embedding(
        _p(emb.word_embeddings.weight, dtype),
        position=_p(emb.position_embeddings.weight, dtype),
        token_type=_p(emb.token_type_embeddings.weight, dtype),
        ln=(_p(emb.LayerNorm.weight, dtype), _p(emb.LayerNorm.bias, dtype), emb.LayerNorm.eps),
        proj=proj,
    )
    if albert:
        if c.inner_group_num != 1:
            raise ValueError(
                f"ALBERT with inner_group_num={c.inner_group_num} is not supported (only 1)"
            )
        groups = [
            _bert_layer(g.albert_layers[0], H, dtype, albert=True)
            for g in model.encoder.albert_layer_groups
        ]
        L, G = c.num_hidden_layers, c.num_hidden_groups
        layers = groups if cfg.shared else [groups[int(l / (L / G))] for l in range(L)]
    else:
        layers = [_bert_layer(layer, H, dtype) for layer in model.encoder.layer]
    return SAN.from_weights(cfg, layers), embedding


def _gpt2(model, dtype):
    c = model.config
    if not c.scale_attn_weights or c.scale_attn_by_inverse_layer_idx or c.reorder_and_upcast_attn:
        raise ValueError(
            "GPT-2 is converted with its default attention scaling only "
            "(scale_attn_weights=True, no inverse-layer scaling, no reordering)"
        )
    H, d = c.n_head, c.n_embd
    cfg = SANConfig(
        n_layers=c.n_layer,
        n_heads=H,
        d_model=d,
        skip=True,
        mlp=c.n_inner or 4 * d,
        activation=activation_of(c.activation_function),
        layernorm="pre",
        bias=True,
        ln_eps=c.layer_norm_epsilon,
        final_layernorm=True,
        causal=True,
        dtype=dtype,
    )
    layers = []
    for block in model.h:
        qkv, bqkv = block.attn.c_attn.weight, block.attn.c_attn.bias  # Conv1D: x @ weight + bias
        w = _attention_weights(
            qkv[:, :d],
            qkv[:, d : 2 * d],
            qkv[:, 2 * d :],
            block.attn.c_proj.weight,
            (bqkv[:d], bqkv[d : 2 * d], bqkv[2 * d :], block.attn.c_proj.bias),
            H,
            dtype,
        )
        w.update(
            W_1=_p(block.mlp.c_fc.weight, dtype),
            b_1=_p(block.mlp.c_fc.bias, dtype),
            W_2=_p(block.mlp.c_proj.weight, dtype),
            b_2=_p(block.mlp.c_proj.bias, dtype),
        )
        w.update(_ln_weights("ln1", block.ln_1, dtype))
        w.update(_ln_weights("ln2", block.ln_2, dtype))
        layers.append(w)
    final = {"gain": _p(model.ln_f.weight, dtype), "shift": _p(model.ln_f.bias, dtype)}
    embedding = Embedding(_p(model.wte.weight, dtype), position=_p(model.wpe.weight, dtype))
    return SAN.from_weights(cfg, layers, final), embedding


def from_transformers(
    model, family: str, name: str, dtype=torch.float64, *, position_dtype="auto"
) -> Network:
    """The :class:`Network` of a transformers ``model`` of ``family`` (``"bert"``, ``"albert"``,
    ``"xlnet"``, ``"gpt2"``) in ``dtype``. float32 weights of a float32 model are shared, not copied.

    ``position_dtype`` (XLNet): the dtype of its relative positions' sinusoids; ``"auto"`` is
    float32, as transformers computes them (needed to match it to 1e-10 in float64).
    """
    check_choice("family", family, ("bert", "albert", "xlnet", "gpt2"))
    if family == "xlnet":
        from .xlnet import convert_xlnet

        san, embedding = convert_xlnet(
            model, dtype, torch.float32 if position_dtype == "auto" else position_dtype
        )
    elif family == "gpt2":
        san, embedding = _gpt2(model, dtype)
    else:
        san, embedding = _bert(model, dtype, albert=family == "albert")
    return Network(name, embedding, san, paper_identity_mlp=family == "albert")
