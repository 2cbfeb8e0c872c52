"""rc.real's ablations equal the same surgery applied to transformers' own modules.

The reference for each ablation is the *same surgery applied to the transformers modules*
(sub-modules swapped or their forward replaced, as the official code did), run through
transformers' own forward with ``output_hidden_states=True``. Small configurations of each
family keep the tests fast; MiniLM is tested at its real size with its real weights.
"""

import functools
import types

import pytest
import torch
from torch import nn

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

# (attention ending, MLP ending) of each variant under each surgery; see
# rankcollapse.real.ablation's table. attention: "ln(x+a)", "ln(a)", "x+a", "a";
# MLP: "ln(y+m)", "m", "none", "ln(y+act)" (ALBERT paper)
ENDINGS = {
    ("full", "paper"): ("ln(x+a)", "ln(y+m)"),
    ("full", "clean"): ("ln(x+a)", "ln(y+m)"),
    ("san", "paper"): ("ln(a)", "none"),
    ("san+mlp", "paper"): ("ln(a)", "ln(y+m)"),
    ("san+skip", "paper"): ("ln(x+a)", "none"),
    ("san", "clean"): ("a", "none"),
    ("san+mlp", "clean"): ("a", "m"),
    ("san+skip", "clean"): ("x+a", "none"),
}


def _end(att_mode, a, x, ln):
    return {
        "ln(x+a)": lambda: ln(x + a),
        "ln(a)": lambda: ln(a),
        "x+a": lambda: x + a,
        "a": lambda: a,
    }[att_mode]()


# ----------------------------------------------------------------------------- BERT surgery


class _BertSelfOutput(nn.Module):
    def __init__(self, orig, mode):
        super().__init__()
        self.dense, self.LayerNorm, self.mode = orig.dense, orig.LayerNorm, mode

    def forward(self, hidden_states, input_tensor):
        return _end(self.mode, self.dense(hidden_states), input_tensor, self.LayerNorm)


class _Id(nn.Module):
    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states


class _BertOutput(nn.Module):
    def __init__(self, orig, mode):
        super().__init__()
        self.dense, self.LayerNorm, self.mode = orig.dense, orig.LayerNorm, mode

    def forward(self, hidden_states, input_tensor):
        m = self.dense(hidden_states)
        return self.LayerNorm(m + input_tensor) if self.mode == "ln(y+m)" else m


def bert_surgery(model, att_mode, mlp_mode):
    for layer in model.encoder.layer:
        layer.attention.output = _BertSelfOutput(layer.attention.output, att_mode)
        if mlp_mode == "none":
            layer.intermediate, layer.output = _Id(), _Id()
        else:
            layer.output = _BertOutput(layer.output, mlp_mode)
    return model


# --------------------------------------------------------------------------- ALBERT surgery


def _albert_attention_forward(self, hidden_states, attention_mask=None, **kwargs):
    from transformers.models.albert.modeling_albert import eager_attention_forward

    shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
    q, k, v = (
        m(hidden_states).view(*shape).transpose(1, 2) for m in (self.query, self.key, self.value)
    )
    out, probs = eager_attention_forward(self, q, k, v, attention_mask, scaling=self.scaling)
    a = self.dense(out.reshape(*hidden_states.shape[:-1], -1))
    return _end(self._mode, a, hidden_states, self.LayerNorm), probs


def _albert_layer_forward(self, hidden_states, attention_mask=None, **kwargs):
    y, _ = self.attention(hidden_states, attention_mask, **kwargs)
    if self._mlp_mode == "none":
        return y
    m = self.ff_chunk(y)
    return self.full_layer_layer_norm(m + y) if self._mlp_mode in ("ln(y+m)", "ln(y+act)") else m


def albert_surgery(model, att_mode, mlp_mode, paper):
    for group in model.encoder.albert_layer_groups:
        for layer in group.albert_layers:
            layer.attention._mode = att_mode
            layer.attention.forward = types.MethodType(_albert_attention_forward, layer.attention)
            if (
                paper and mlp_mode == "none"
            ):  # the official code: the two linear maps set to the identity
                layer.ffn, layer.ffn_output = nn.Identity(), nn.Identity()
                mlp_mode = "ln(y+act)"
            layer._mlp_mode = mlp_mode
            layer.forward = types.MethodType(_albert_layer_forward, layer)
    return model


# ---------------------------------------------------------------------------- XLNet surgery


def _xlnet_post_attention(self, h, attn_vec, residual=True):
    a = torch.einsum("ibnd,hnd->ibh", attn_vec, self.o)
    return _end(self._mode, a, h, self.layer_norm)


def _xlnet_ff_forward(self, inp):
    return self.layer_2(self.activation_function(self.layer_1(inp)))


def xlnet_surgery(model, att_mode, mlp_mode):
    for layer in model.layer:
        if att_mode == "ln(a)":  # exactly the official code's switch
            layer.rel_attn.post_attention = functools.partial(
                layer.rel_attn.post_attention, residual=False
            )
        elif att_mode != "ln(x+a)":
            layer.rel_attn._mode = att_mode
            layer.rel_attn.post_attention = types.MethodType(_xlnet_post_attention, layer.rel_attn)
        if mlp_mode == "none":
            layer.ff = nn.Identity()
        elif mlp_mode == "m":
            layer.ff.forward = types.MethodType(_xlnet_ff_forward, layer.ff)
    return model


# ------------------------------------------------------------------------------ small models

SMALL = {
    "bert": (
        "bert-base-cased",
        transformers.BertConfig,
        transformers.BertModel,
        dict(
            vocab_size=28996,
            hidden_size=48,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=96,
        ),
    ),
    "albert": (
        "albert-base-v2",
        transformers.AlbertConfig,
        transformers.AlbertModel,
        dict(
            vocab_size=30000,
            embedding_size=16,
            hidden_size=48,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=96,
            hidden_act="gelu_new",
        ),
    ),
    "xlnet": (
        "xlnet-base-cased",
        transformers.XLNetConfig,
        transformers.XLNetModel,
        dict(vocab_size=32000, d_model=48, n_layer=3, n_head=4, d_inner=96, mem_len=None),
    ),
}


def small(family, seed=0):
    name, config_cls, model_cls, kw = SMALL[family]
    config = config_cls(**kw)
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_cls(config).eval()
    return rc.real.RealModel(name, family, model, False, "small test model", None, (101, 102))


def reference_states(loaded, ids, variant, surgery, mask=None, dtype=torch.float32):
    import copy

    model = copy.deepcopy(loaded.hf).to(dtype)
    att_mode, mlp_mode = ENDINGS[(variant, surgery)]
    if loaded.family == "bert":
        bert_surgery(model, att_mode, mlp_mode)
    elif loaded.family == "albert":
        albert_surgery(model, att_mode, mlp_mode, paper=surgery == "paper")
    else:
        xlnet_surgery(model, att_mode, mlp_mode)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, output_hidden_states=True)
    return torch.stack(out.hidden_states)


def rel_err(got, want, mask=None):
    if mask is not None:  # padded positions are not compared
        keep = mask.bool()[None, :, :, None]
        got, want = got * keep, want * keep
    scale = want.abs().amax(dim=(-1, -2, -3), keepdim=True).clamp_min(1e-30)
    return ((got - want).abs() / scale).max().item()


@pytest.fixture(scope="module")
def ids():
    return rc.real.token_windows(None, 3, 20)


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
@pytest.mark.parametrize("variant", rc.real.VARIANTS)
@pytest.mark.parametrize("surgery", rc.real.SURGERIES)
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_ablation_equals_the_same_surgery_on_transformers_modules(
    family, variant, surgery, dtype, tol, ids
):
    loaded = small(family)
    got = rc.real.hidden_states(loaded, ids, variant, surgery, dtype=dtype)
    want = reference_states(loaded, ids, variant, surgery, dtype=dtype)
    assert got.shape == want.shape == (4, 3, 20, 48)
    assert rel_err(got, want) < tol


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
def test_masked_batch_matches_transformers_on_real_tokens(family, ids):
    loaded = small(family)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    mask[2, 5:] = 0
    got = rc.real.hidden_states(loaded, ids, "full", dtype=torch.float64, attention_mask=mask)
    want = reference_states(loaded, ids, "full", "clean", mask=mask, dtype=torch.float64)
    assert rel_err(got, want, mask) < 1e-10
    # one sequence at a time, cut to its real tokens, gives the same residuals
    rr = rc.real.relative_residuals(got, mask)
    for i in range(3):
        n = int(mask[i].sum())
        alone = rc.real.hidden_states(loaded, ids[i, :n], "full")
        assert torch.allclose(rc.real.relative_residuals(alone)[:, 0], rr[:, i], rtol=1e-10)


@pytest.fixture(scope="module")
def minilm():
    return rc.real.load("all-MiniLM-L6-v2", pretrained=True)


@pytest.mark.parametrize("variant", ["san", "san+mlp", "san+skip"])
@pytest.mark.parametrize("surgery", rc.real.SURGERIES)
def test_minilm_ablations_equal_surgery(minilm, variant, surgery):
    ids = rc.real.token_windows(minilm, 2, 24)
    got = rc.real.hidden_states(minilm, ids, variant, surgery, dtype=torch.float64)
    assert (
        rel_err(got, reference_states(minilm, ids, variant, surgery, dtype=torch.float64)) < 1e-10
    )


def test_pure_attention_collapses_and_full_model_does_not(minilm):
    ids = rc.real.token_windows(minilm, 2, 64)
    san = rc.real.relative_residuals(rc.real.hidden_states(minilm, ids, "san", "clean"))
    full = rc.real.relative_residuals(rc.real.hidden_states(minilm, ids, "full"))
    assert (san[-1] < 1e-6).all() and (full[-1] > 0.3).all()
