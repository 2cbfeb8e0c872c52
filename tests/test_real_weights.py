"""rc.ops.weight_count counts every parameter of a SAN: per-head widths, biases, LayerNorms,
XLNet's relative attention, shared layers once; and a converted real model holds exactly the
transformers model's weights outside its embedding."""

import pytest
import torch

import rankcollapse as rc
from rankcollapse.ops import weight_count

transformers = pytest.importorskip("transformers")


def torch_count(module) -> int:
    """Parameters as torch counts them (a shared tensor once)."""
    return sum(p.numel() for p in module.parameters())


def test_a_per_head_model_by_hand():
    # d_qk = 5 and d_v = 2 per head, not d_model / n_heads = 4 (2 layers, 3 heads, d = 12):
    # W_Q, W_K 3 * 12 * 5 each, W_V 3 * 12 * 2, W_O 3 * 2 * 12 per layer
    cfg = rc.san.SANConfig(n_layers=2, n_heads=3, d_model=12, d_qk=5, d_v=2)
    by_hand = 2 * (2 * 3 * 12 * 5 + 3 * 12 * 2 + 3 * 2 * 12)
    assert weight_count(cfg) == by_hand == 1008
    assert torch_count(rc.san.SAN(cfg, seed=0)) == by_hand
    # biases (b_Q, b_K 3 * 5, b_V 3 * 2, b_O 12), an MLP of width 7 with its biases, two post-LNs
    full = cfg.replace(bias=True, mlp=7, layernorm="post")
    layer = 504 + (2 * 15 + 6 + 12) + (2 * 12 * 7 + 7 + 12) + 4 * 12
    assert weight_count(full) == 2 * layer == torch_count(rc.san.SAN(full, seed=0))


@pytest.mark.parametrize(
    "changes",
    [
        dict(),
        dict(shared=True),
        dict(shared=True, n_layers=0),
        dict(n_layers=0),
        dict(layernorm="pre", final_layernorm=True, causal=True, mlp=5),
        dict(attention="relative", d_v=5, bias=True, mlp=3, layernorm="post"),
        dict(attention="relative", d_v=5, shared=True),
        dict(layernorm="post", mlp=0, bias=True),
    ],
)
def test_weight_count_is_torchs_parameter_count(changes):
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=6, d_qk=5, d_v=3).replace(**changes)
    assert weight_count(cfg) == torch_count(rc.san.SAN(cfg, seed=0))


def _tiny(family):
    kw = dict(vocab_size=50)
    if family == "bert":
        c = transformers.BertConfig(
            hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24, **kw
        )
        return transformers.BertModel(c, add_pooling_layer=False)
    if family == "albert":
        c = transformers.AlbertConfig(
            embedding_size=8,
            hidden_size=16,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=24,
            **kw,
        )
        return transformers.AlbertModel(c, add_pooling_layer=False)
    if family == "xlnet":
        c = transformers.XLNetConfig(
            d_model=16, n_layer=2, n_head=4, d_inner=24, mem_len=None, **kw
        )
        return transformers.XLNetModel(c)
    c = transformers.GPT2Config(n_embd=16, n_layer=2, n_head=4, n_positions=32, **kw)
    return transformers.GPT2Model(c)


def _outside_the_san(family, model) -> int:
    """The transformers model's parameters that the converted SAN does not hold (its embedding,
    XLNet's mask embedding) minus the zero biases the SAN holds where XLNet has none."""
    if family == "bert":
        return torch_count(model.embeddings)
    if family == "albert":
        return torch_count(model.embeddings) + torch_count(
            model.encoder.embedding_hidden_mapping_in
        )
    if family == "gpt2":
        return torch_count(model.wte) + torch_count(model.wpe)
    c = model.config  # XLNet: no q, k, v, o biases; the SAN's are zeros (3 * d + d per layer)
    return torch_count(model.word_embedding) + model.mask_emb.numel() - c.n_layer * 4 * c.d_model


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet", "gpt2"])
def test_a_converted_model_holds_the_transformers_weights(family):
    torch.manual_seed(0)
    model = _tiny(family).eval()
    net = rc.real.from_transformers(model, family, family, torch.float32)
    count = weight_count(net.config)
    assert count == torch_count(net.san)
    assert count == torch_count(model) - _outside_the_san(family, model)
