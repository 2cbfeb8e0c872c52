"""rc.models: the layer-by-layer forward equals transformers' own modules, for every variant.

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

TOL = 1e-5

# (attention ending, MLP ending) of each variant under each surgery; see rc.models' docstring.
# attention: "ln(x+a)", "ln(a)", "x+a", "a";  MLP: "ln(y+m)", "m", "none", "ln(y+act)" (ALBERT paper)
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
    return {"ln(x+a)": lambda: ln(x + a), "ln(a)": lambda: ln(a), "x+a": lambda: x + a, "a": lambda: a}[att_mode]()


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
    q, k, v = (m(hidden_states).view(*shape).transpose(1, 2) for m in (self.query, self.key, self.value))
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
            if paper and mlp_mode == "none":  # the official code: the two linear maps set to the identity
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
            layer.rel_attn.post_attention = functools.partial(layer.rel_attn.post_attention, residual=False)
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
    "bert": ("bert-base-cased", transformers.BertConfig, transformers.BertModel,
             dict(vocab_size=28996, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96)),
    "albert": ("albert-base-v2", transformers.AlbertConfig, transformers.AlbertModel,
               dict(vocab_size=30000, embedding_size=16, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
                    intermediate_size=96, hidden_act="gelu_new")),
    "xlnet": ("xlnet-base-cased", transformers.XLNetConfig, transformers.XLNetModel,
              dict(vocab_size=32000, d_model=48, n_layer=3, n_head=4, d_inner=96, mem_len=None)),
}


def small(family, seed=0):
    name, config_cls, model_cls, kw = SMALL[family]
    config = config_cls(**kw)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(config).eval()
    return rc.models.Loaded(name, family, model, False, "small test model", None, (101, 102))


def reference_states(loaded, ids, variant, surgery, mask=None):
    import copy

    model = copy.deepcopy(loaded.model)
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
    return rc.models.token_windows(None, 3, 20)


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
@pytest.mark.parametrize("variant", rc.models.VARIANTS)
@pytest.mark.parametrize("surgery", rc.models.SURGERIES)
def test_ablation_equals_the_same_surgery_on_transformers_modules(family, variant, surgery, ids):
    loaded = small(family)
    got = rc.models.hidden_states(loaded, ids, variant, surgery, dtype=torch.float32)
    want = reference_states(loaded, ids, variant, surgery)
    assert got.shape == want.shape == (4, 3, 20, 48)
    assert rel_err(got, want) < TOL


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
def test_masked_batch_matches_transformers_on_real_tokens(family, ids):
    loaded = small(family)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    mask[2, 5:] = 0
    got = rc.models.hidden_states(loaded, ids, "full", dtype=torch.float32, attention_mask=mask)
    want = reference_states(loaded, ids, "full", "clean", mask=mask)
    assert rel_err(got, want, mask) < TOL
    # one sequence at a time, cut to its real tokens, gives the same residuals
    rr = rc.models.relative_residuals(got.double(), mask)
    for i in range(3):
        n = int(mask[i].sum())
        alone = rc.models.hidden_states(loaded, ids[i, :n], "full", dtype=torch.float32)
        assert torch.allclose(rc.models.relative_residuals(alone.double())[:, 0], rr[:, i], rtol=1e-4)


@pytest.fixture(scope="module")
def minilm():
    return rc.models.load("all-MiniLM-L6-v2", pretrained=True)


def test_minilm_full_forward_equals_bert_model(minilm):
    ids = rc.models.token_windows(minilm, 2, 32)
    with torch.no_grad():
        want = torch.stack(minilm.model(ids, output_hidden_states=True).hidden_states)
    got = rc.models.hidden_states(minilm, ids, dtype=torch.float32)
    assert got.shape == (7, 2, 32, 384)
    assert rel_err(got, want) < TOL
    got64 = rc.models.hidden_states(minilm, ids, dtype=torch.float64)
    assert rel_err(got64.float(), want) < TOL


@pytest.mark.parametrize("variant", ["san", "san+mlp", "san+skip"])
@pytest.mark.parametrize("surgery", rc.models.SURGERIES)
def test_minilm_ablations_equal_surgery(minilm, variant, surgery):
    ids = rc.models.token_windows(minilm, 2, 24)
    got = rc.models.hidden_states(minilm, ids, variant, surgery, dtype=torch.float32)
    assert rel_err(got, reference_states(minilm, ids, variant, surgery)) < TOL


def test_texts_are_tokenised_padded_and_masked(minilm):
    texts = ["The Moon was not a smooth sphere.", "Water on Earth is always moving, and so is heat."]
    states = rc.models.hidden_states(minilm, texts, dtype=torch.float32)
    ids = [minilm.tokenizer(t) for t in texts]
    assert states.shape[1:3] == (2, max(len(i) for i in ids) + 2)
    alone = rc.models.hidden_states(minilm, texts[0], dtype=torch.float32)
    n = len(ids[0]) + 2
    assert alone.shape[2] == n
    assert rel_err(states[:, :1, :n], alone) < TOL


def test_pure_attention_collapses_and_full_model_does_not(minilm):
    ids = rc.models.token_windows(minilm, 2, 64)
    san = rc.models.relative_residuals(rc.models.hidden_states(minilm, ids, "san", "clean"))
    full = rc.models.relative_residuals(rc.models.hidden_states(minilm, ids, "full"))
    assert (san[-1] < 1e-6).all() and (full[-1] > 0.3).all()


def test_init_models_are_the_published_shapes_and_seeded():
    state = torch.random.get_rng_state()
    albert = rc.models.load("albert-base-v2", seed=3)
    assert torch.equal(torch.random.get_rng_state(), state), "load must not touch the global generator"
    again = rc.models.load("albert-base-v2", seed=3)
    other = rc.models.load("albert-base-v2", seed=4)
    w = lambda m: m.model.encoder.albert_layer_groups[0].albert_layers[0].attention.query.weight  # noqa: E731
    assert torch.equal(w(albert), w(again)) and not torch.equal(w(albert), w(other))
    c = albert.model.config
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.embedding_size, c.vocab_size) == (768, 12, 12, 128, 30000)
    assert albert.n_layers == 12 and not albert.pretrained


def test_token_windows():
    ids = rc.models.token_windows(None, 32, 128)
    assert ids.shape == (32, 128) and ids.dtype == torch.long
    assert (ids[:, 0] == 101).all() and (ids[:, -1] == 102).all()
    assert len({tuple(r.tolist()) for r in ids}) == 32  # all different
    assert rc.models.corpus() and all(len(doc.split()) > 300 for doc in rc.models.corpus())
    mapped = rc.models._map_ids(list(range(28990, 30522)), 28996)
    assert min(mapped) >= 1 and max(mapped) < 28996
    with pytest.raises(ValueError, match="n_seq"):
        rc.models.token_windows(None, 10_000, 128)


def test_pretrained_hub_model_unavailable_is_one_clear_message(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-rankcollapse-test")
    assert rc.models.try_load("xlnet-base-cased", pretrained=True, instead="using MiniLM instead") is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "xlnet-base-cased" in out[0] and "MiniLM instead" in out[0]
    with pytest.raises(rc.models.ModelUnavailable):
        rc.models.load("bert-base-cased", pretrained=True)


def test_path_products_order_and_residuals():
    gen = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(3, 1, 2, 5, 5, generator=gen, dtype=torch.float64), dim=-1)
    paths = [[(0, 1), (2, 0)]]
    right = rc.models.path_products(A, paths)[0]
    assert torch.allclose(right, A[2, 0, 0] @ A[0, 0, 1])
    rev = rc.models.path_products(A, paths, order="reversed")[0]
    assert torch.allclose(rev, A[0, 0, 1] @ A[2, 0, 0])
    assert torch.allclose(right.sum(-1), torch.ones(5, dtype=torch.float64))
    ones = torch.ones(1, 5, 5, dtype=torch.float64) / 5
    assert rc.models.path_residuals(ones).item() == pytest.approx(0, abs=1e-15)
    assert rc.models.path_residuals(ones, against="rank1").item() == pytest.approx(0, abs=1e-12)
    sampled = rc.models.sample_paths(12, 12, 4, 10, seed=1)
    assert len(sampled) == 10 and all(len(p) == 4 and [l for l, _ in p] == sorted({l for l, _ in p}) for p in sampled)
    assert sampled == rc.models.sample_paths(12, 12, 4, 10, seed=1)
    prof = rc.models.path_profile(A, n_paths=4, seed=0)
    assert prof.shape == (4, 3) and (prof[:, 0] > 0).all()


def test_threads_are_restored():
    before = torch.get_num_threads()
    with rc.models._threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_bad_arguments(minilm):
    ids = rc.models.token_windows(minilm, 1, 8)
    with pytest.raises(ValueError, match="variant"):
        rc.models.hidden_states(minilm, ids, "mlp")
    with pytest.raises(ValueError, match="surgery"):
        rc.models.hidden_states(minilm, ids, "san", "official")
    with pytest.raises(TypeError, match="model"):
        rc.models.hidden_states(minilm.model, ids)
    with pytest.raises(TypeError, match="texts_or_ids"):
        rc.models.hidden_states(minilm, ids.float())
    with pytest.raises(ValueError, match="name"):
        rc.models.load("gpt-2")


def test_lineup_offline_prints_one_line(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    models = rc.models.lineup(0, hub=True)
    assert [m.pretrained for m in models] == [False, False, False, True]
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "bert-base-cased, albert-base-v2, xlnet-base-cased" in out[0] and "MiniLM" in out[0]


def test_pretrained_hub_model_from_a_local_copy(tmp_path):
    """The real from_pretrained path: a (tiny, stand-in) local copy in the hub cache is found offline."""
    import os
    import subprocess
    import sys

    snap = tmp_path / "hub" / "models--albert-base-v2" / "snapshots" / "0123"
    snap.mkdir(parents=True)
    (tmp_path / "hub" / "models--albert-base-v2" / "refs").mkdir()
    (tmp_path / "hub" / "models--albert-base-v2" / "refs" / "main").write_text("0123")
    small("albert").model.save_pretrained(snap)
    code = (
        "import rankcollapse as rc\n"
        "m = rc.models.load('albert-base-v2', pretrained=True)\n"
        "assert m.pretrained and m.tokenizer is None and 'local copy' in m.source, m.source\n"
        "ids = rc.models.token_windows(m, 2, 16)\n"
        "assert ids.max() < 30000\n"
        "print(tuple(rc.models.hidden_states(m, ids, 'san', 'clean').shape))\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(4, 2, 16, 48)"


def test_thread_count_from_the_environment(monkeypatch):
    import torch

    from rankcollapse import models

    monkeypatch.delenv("RANKCOLLAPSE_THREADS", raising=False)
    assert models._threads_from_env() is None
    monkeypatch.setenv("RANKCOLLAPSE_THREADS", "1")
    assert models._threads_from_env() == 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("RANKCOLLAPSE_THREADS", bad)
        with pytest.raises(ValueError, match="RANKCOLLAPSE_THREADS must be a positive integer"):
            models._threads_from_env()
    before = torch.get_num_threads()
    with models._threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with models._threads(None):  # None: leave torch's count as it is
        assert torch.get_num_threads() == before
