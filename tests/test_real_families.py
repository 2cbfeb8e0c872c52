"""rc.real.families: every family built at k times its depth, from transformers' initialisation
or the library's, seeded; every family's converted network matches transformers' forward
(float64, every layer's hidden state, 1e-10 relative) at twice its depth, on a padded batch, and
in each configuration its converter maps differently; a pretrained network's layers applied
again."""

import math

import pytest
import torch
from real_by_hand import SMALL, TOL, small

import rankcollapse as rc

transformers = pytest.importorskip("transformers")


def rope(theta, partial=1.0):
    return {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": partial}


#: (family, what its converter maps differently, the configuration's changes)
CONFIGURATIONS = [
    ("llama", "gqa", {}),
    ("llama", "biases", dict(attention_bias=True, mlp_bias=True)),
    ("llama", "mqa-head-dim", dict(num_key_value_heads=1, head_dim=24)),
    ("llama", "theta", dict(rope_parameters=rope(500.0))),
    ("qwen2", "gqa", {}),
    ("qwen2", "mqa", dict(num_key_value_heads=1)),
    ("qwen2", "mha", dict(num_key_value_heads=4)),
    ("gpt_neox", "parallel", {}),
    ("gpt_neox", "sequential", dict(use_parallel_residual=False)),
    ("gpt_neox", "full-rotary", dict(rope_parameters=rope(500.0, 1.0))),
    ("gpt_neox", "no-attention-bias", dict(attention_bias=False)),
]


def test_every_family_is_covered():
    assert set(SMALL) == set(rc.real.FAMILIES)


@pytest.mark.parametrize("padded", [False, True], ids=["batch", "padded"])
@pytest.mark.parametrize("family", rc.real.FAMILIES)
def test_twice_the_depth_matches_transformers(family, padded):
    """2 native layers built 4 deep; ``padded``: the last sequence's final third padded out."""
    errors = rc.real.parity(family, small(family), seed=int(padded), depth_factor=2, padded=padded)
    assert len(errors) == 5 and max(errors) < TOL, errors


@pytest.mark.parametrize(
    "family, changes",
    [(family, changes) for family, _, changes in CONFIGURATIONS],
    ids=[f"{family}-{name}" for family, name, _ in CONFIGURATIONS],
)
def test_every_layer_of_each_configuration_matches_transformers(family, changes):
    errors = rc.real.parity(family, {**small(family, 3), **changes}, seed=0, n_tokens=11)
    assert len(errors) == 4 and max(errors) < TOL, errors


@pytest.mark.parametrize("family", rc.real.FAMILIES)
@pytest.mark.parametrize("init", ["transformers", "library"])
def test_depth_factor_multiplies_the_layers_and_the_seed_decides(family, init):
    net = rc.real.build(family, small(family), seed=1, depth_factor=4, init=init)
    assert isinstance(net, rc.real.Network) and net.config.n_layers == 8
    assert net.name.endswith(f"x4 ({init} init, seed 1)")
    distinct = list(dict.fromkeys(net.san.layers))
    assert len(distinct) == (1 if family == "albert" else 8)  # ALBERT: its one layer, 8 times
    again = rc.real.build(family, small(family), seed=1, depth_factor=4, init=init)
    other = rc.real.build(family, small(family), seed=2, depth_factor=4, init=init)
    W = lambda n: n.san.layers[-1].W_Q  # noqa: E731
    assert torch.equal(W(net), W(again)) and not torch.equal(W(net), W(other))
    ids = torch.randint(0, 100, (2, 6), generator=torch.Generator().manual_seed(0))
    assert len(net.ablate("full")(net.embed(ids)).hidden_states) == 9


def test_the_two_initialisations_differ_in_scale_as_documented():
    lib = rc.real.build("llama", small("llama"), seed=0, init="library").san.layers[0]
    hf = rc.real.build("llama", small("llama"), seed=0).san.layers[0]
    assert float(lib.W_Q.std()) == pytest.approx(1 / math.sqrt(64), rel=0.1)
    assert float(hf.W_Q.std()) == pytest.approx(1 / 24, rel=0.1)  # SmolLM2's initializer_range
    bert = rc.real.build("bert", small("bert"), seed=0).san.layers[0]
    assert float(bert.W_Q.std()) == pytest.approx(0.02, rel=0.1) and not bert.b_Q.any()
    assert rc.real.build("bert", small("bert"), seed=0, init="library").san.layers[0].b_Q.any()


def test_native_configurations_and_bad_arguments():
    assert rc.real.native_config("llama")["num_key_value_heads"] == 3
    assert rc.real.native_config("gpt_neox")["use_parallel_residual"] is True
    assert rc.real.native_config("bert") == rc.real.MODELS["bert-base-cased"].config
    assert rc.real.native_config("gpt2", {"n_layer": 3})["n_layer"] == 3
    with pytest.raises(ValueError, match="family"):
        rc.real.build("t5")
    with pytest.raises(ValueError, match=r"config_overrides.*\['hiden_size'\]"):
        rc.real.build("llama", {"hiden_size": 64})
    with pytest.raises(TypeError, match="config_overrides"):
        rc.real.build("llama", [("hidden_size", 64)])
    with pytest.raises(ValueError, match="init"):
        rc.real.build("llama", small("llama"), init="xavier")
    with pytest.raises(ValueError, match="depth_factor"):
        rc.real.build("llama", small("llama"), depth_factor=0)
    with pytest.raises(TypeError, match="as_transformers"):
        rc.real.build("llama", small("llama"), as_transformers=1)
    # a model's own configuration is the whole configuration: GPT-2 small's is not consulted
    hf = rc.real.transformers_model("gpt2", small("gpt2"), seed=0)
    deeper = rc.real.transformers_model("gpt2", hf.config, seed=0, depth_factor=2)
    assert (deeper.config.n_embd, deeper.config.n_layer, len(deeper.h)) == (64, 4, 4)
    with pytest.raises(ValueError, match="config_overrides: a gpt2 configuration"):
        rc.real.transformers_model("bert", hf.config)


@torch.no_grad()
def test_layers_applied_again_share_the_weights():
    net = rc.real.build("bert", small("bert"), seed=0)
    twice = rc.real.repeated(net, 2)
    assert twice.config.n_layers == 4 and twice.san.layers[2].W_Q is net.san.layers[0].W_Q
    X = net.embed(torch.randint(0, 100, (1, 7), generator=torch.Generator().manual_seed(0)))
    once = net.san(X).last_hidden_state
    assert torch.allclose(twice.san(X).last_hidden_state, net.san(once).last_hidden_state)
    albert = rc.real.repeated(rc.real.build("albert", small("albert"), seed=0), 3)
    assert albert.config.n_layers == 6 and len(set(albert.san.layers)) == 1
    with pytest.raises(TypeError, match="net"):
        rc.real.repeated(net.san, 2)


@torch.no_grad()
def test_a_real_model_of_a_new_family_runs_the_books_instruments():
    m = rc.real.real_model("gpt_neox", small("gpt_neox"), seed=0, depth_factor=2)
    assert (m.n_layers, m.max_tokens, m.cls_sep, m.pretrained) == (4, 2048, (None, None), False)
    ids = rc.real.token_windows(m, 2, 10)
    assert ids.shape == (2, 10) and int(ids.max()) < 100
    curve = rc.real.residual_curve(m, ids, "full", "clean")
    assert curve.shape == (2, 5) and torch.isfinite(curve).all()
    # the float64 network (build's default) against the one computing as transformers does
    exact = rc.real.real_model("gpt_neox", small("gpt_neox"), seed=0, depth_factor=2)
    exact.as_transformers = True
    states = rc.real.hidden_states(m, ids), rc.real.hidden_states(exact, ids)
    assert 0 < (states[0] - states[1]).abs().max() < 1e-5
