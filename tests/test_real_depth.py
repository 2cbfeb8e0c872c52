"""rc.real.depth: deeper networks from a real model's own layers, every variant in lockstep, and
each layer's theorem constants, checked against the library's own forward pass and theorems."""

import math

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse.real import depth

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def small_bert():
    return depth.build("bert-base-cased", 3, width=32, heads=2)


@pytest.fixture(scope="module")
def small_gpt2():
    return depth.build("gpt2", 4, width=32, heads=2)


def test_build_narrows_the_published_configuration(small_bert):
    cfg = small_bert.network_config()
    assert (cfg.d_model, cfg.n_heads, cfg.mlp, cfg.n_layers) == (32, 2, 128, 12)
    with pytest.raises(ValueError, match="together"):
        depth.build("gpt2", 0, width=32)
    with pytest.raises(ValueError, match="multiple"):
        depth.build("gpt2", 0, width=30, heads=4)


def test_build_at_the_published_size_is_load():
    built = depth.build("albert-base-v2", 2)
    loaded = rc.real.load("albert-base-v2", False, 2)
    for (k, a), (_, b) in zip(built.hf.state_dict().items(), loaded.hf.state_dict().items()):
        assert torch.equal(a, b), k


def test_deeper_layers_keep_the_native_ones_and_draw_from_their_distribution(small_bert):
    native = depth.native_layers(small_bert.network(torch.float32))
    drawn = list(depth.deeper_layers(native, 36, "draw", 5))
    assert all(drawn[l] is native[l] for l in range(12))
    for k, t in native[0].items():
        pooled = torch.stack([layer[k] for layer in native]).double()
        new = torch.stack([layer[k] for layer in drawn[12:]]).double()
        if bool(pooled.min() == pooled.max()):  # LayerNorm gains and shifts, biases at zero
            assert all(torch.equal(layer[k], t) for layer in drawn[12:]), k
        else:
            assert math.isclose(float(new.std()), float(pooled.std()), rel_tol=0.05), k
            assert abs(float(new.mean())) < 0.1 * float(pooled.std()), k
    again = list(depth.deeper_layers(native, 36, "draw", 5))
    other = list(depth.deeper_layers(native, 36, "draw", 6))
    assert torch.equal(again[20]["W_Q"], drawn[20]["W_Q"])
    assert not torch.equal(other[20]["W_Q"], drawn[20]["W_Q"])
    repeated = list(depth.deeper_layers(native, 30, "repeat", 5))
    assert repeated[25] is native[1]


def test_layer_constants_are_the_theorems():
    """c_floor is 4 beta nu H / sqrt(d_qk) of rc.theory; Omega and k those of rc.lower_bound."""
    cfg = rc.san.SANConfig(n_layers=2, n_heads=3, d_model=12, skip=True)
    san = rc.san.SAN(cfg, seed=1)
    k, omega = rc.lower_bound.layer_constants(san)
    q, w1, winf = rc.theory.weights.head_norms(san)
    b = rc.theory.beta(san)
    for l, block in enumerate(san.layers):
        got = depth.layer_theorem_constants(block.weights(), 3, cfg.d_qk)
        beta = b[l].max()
        nu = torch.sqrt((q[l] * w1[l]).max() * (q[l] * winf[l]).max()) / beta
        assert math.isclose(got["c_floor"], float(4 * beta * nu * 3 / math.sqrt(cfg.d_qk)))
        assert math.isclose(got["omega"], float(omega[l]), rel_tol=1e-12)
        assert math.isclose(got["k"], float(k[l]), rel_tol=1e-12)


def test_grouped_heads_count_each_query_head():
    w = {
        "W_Q": torch.randn(4, 8, 2, dtype=torch.float64),
        "W_K": torch.randn(2, 8, 2, dtype=torch.float64),
        "W_V": torch.randn(2, 8, 2, dtype=torch.float64),
        "W_O": torch.randn(4, 2, 8, dtype=torch.float64),
    }
    full = dict(w, W_K=w["W_K"].repeat_interleave(2, 0), W_V=w["W_V"].repeat_interleave(2, 0))
    assert depth.layer_theorem_constants(w, 4, 2) == depth.layer_theorem_constants(full, 4, 2)


@pytest.mark.parametrize("fixture", ["small_bert", "small_gpt2"])
def test_the_native_block_is_the_model_itself(request, fixture):
    """The lockstep run's first L layers are the library's own forward pass of the model (every
    variant, clean surgery), to float64 rounding."""
    model = request.getfixturevalue(fixture)
    ids = depth.texts(model, 2, 12)
    run = depth.depth_run(model, ids, 0, factors=(1, 2), float32=())
    L = model.n_layers
    assert run.curves["full"].shape == (2, 2 * L + 1)
    assert run.curves[("scaled", 2)].shape == (2, 2 * L + 1)
    assert run.causal == (fixture == "small_gpt2")
    for variant in ("full", "san+skip", "san"):
        want = rc.real.residual_curve(model, ids, variant, "clean").numpy()
        got = run.curves[variant][:, : L + 1]
        # GPT-2's last hidden state is after its final LayerNorm, which the run leaves out
        upto = L if fixture == "small_gpt2" and variant == "full" else L + 1
        ok = np.isfinite(got[:, :upto])
        np.testing.assert_allclose(got[:, :upto][ok], want[:, :upto][ok], rtol=1e-9, atol=1e-15)
    if not run.causal:  # without a mask pure attention reaches rounding error and stops
        assert np.isnan(run.curves["san"][:, -1]).all()


def test_flipped_and_scaled_are_the_same_weights_under_another_config(small_bert):
    ids = depth.texts(small_bert, 2, 10)
    run = depth.depth_run(small_bert, ids, 0, factors=(1, 2), float32=())
    net = small_bert.network(torch.float64)
    X = net.embed(ids)
    native = depth.native_layers(net)
    layers = list(depth.deeper_layers(native, 24, "draw", depth.extension_seed(0)))
    cfg = net.config.replace(n_layers=24)
    flipped = rc.san.SAN.from_weights(cfg.replace(layernorm="pre"), layers)
    with torch.no_grad():
        want = [rc.residual.relative_residual(h) for h in flipped(X).hidden_states]
    np.testing.assert_allclose(run.curves["flipped"], torch.stack(want, 1).numpy(), rtol=1e-9)
    lam = 1 / math.sqrt(2)
    scaled_layers = [dict(w, W_2=w["W_2"] * lam, b_2=w["b_2"] * lam) for w in layers]
    scaled = rc.san.SAN.from_weights(cfg.replace(branch_scale=lam), scaled_layers)
    with torch.no_grad():
        want = [rc.residual.relative_residual(h) for h in scaled(X).hidden_states]
    np.testing.assert_allclose(run.curves[("scaled", 2)], torch.stack(want, 1).numpy(), rtol=1e-9)


def test_every_layer_gets_its_own_constants(small_bert):
    """Each layer's constants are those of its own weights: a drawn layer is never given another's
    (the run once looked them up by the id of the layer's dict, which Python reuses once a drawn
    layer is freed: at BERT's published width, 54 distinct constants for its 96 layers)."""
    ids = depth.texts(small_bert, 1, 6)
    run = depth.depth_run(small_bert, ids, 0, factors=(1, 4), variants=("full",), float32=())
    native = depth.native_layers(small_bert.network(torch.float32))
    layers = depth.deeper_layers(native, 48, "draw", depth.extension_seed(0))
    cfg = small_bert.network_config()
    want = [depth.layer_theorem_constants(w, cfg.n_heads, cfg.d_qk)["omega"] for w in layers]
    np.testing.assert_allclose(run.constants["omega"], want, rtol=1e-12)
    assert len(set(run.constants["omega"][12:])) == 36  # every drawn layer is a new one


def test_the_residual_and_the_mean_are_measured_apart_and_underflow_is_no_collapse():
    """Each layer's residual ||res(X_l)|| and mean ||1 x_l^T|| (composite norms) beside the
    relative residual, equal to the library's own on the same states; a stream whose tokens
    shrink below UNDERFLOW stops there and says so (Llama's attention and MLP without skips,
    narrowed: its tokens go to zero within a few layers at a relative residual near 1)."""
    model = depth.build("llama", 33, width=64, heads=4, layers=12)
    ids = depth.texts(model, 2, 8)
    run = depth.depth_run(
        model, ids, 0, factors=(1, 2), variants=("san+mlp", "san+skip"), float32=()
    )
    at = run.underflow["san+mlp"]
    assert 1 <= at <= 24 and np.isnan(run.curves["san+mlp"][:, at:]).all()
    assert np.nanmin(run.curves["san+mlp"][:, :at]) > 0.1  # not collapsed when it underflowed
    net = model.network(torch.float64)
    X = net.embed(ids)
    native = depth.native_layers(net)
    layers = list(depth.deeper_layers(native, 24, "draw", depth.extension_seed(0)))
    base = net.config.replace(
        n_layers=24, norm_dtype=None, softmax_dtype=None, position_dtype=None
    )  # the run's arithmetic: float64 throughout
    cfg, _ = rc.real.ablation.ablation_config(base, "san+skip", "clean")
    with torch.no_grad():
        attention = [{k: w[k] for k in ("W_Q", "W_K", "W_V", "W_O")} for w in layers]
        hidden = rc.san.SAN.from_weights(cfg, attention)(X).hidden_states
    R = [rc.residual.res(h) for h in hidden]
    want_res = torch.stack([rc.residual.matrix_norm(r) for r in R], 1).numpy()
    want_mean = torch.stack([rc.residual.matrix_norm(h - r) for h, r in zip(hidden, R)], 1).numpy()
    np.testing.assert_allclose(run.residual_norms["san+skip"], want_res, rtol=1e-9)
    np.testing.assert_allclose(run.mean_norms["san+skip"], want_mean, rtol=1e-9)
    assert "san+skip" not in run.underflow


def test_bad_arguments_name_themselves(small_bert):
    ids = depth.texts(small_bert, 2, 8)
    with pytest.raises(ValueError, match="variants"):
        depth.depth_run(small_bert, ids, 0, variants=("nope",))
    with pytest.raises(ValueError, match="extension"):
        depth.depth_run(small_bert, ids, 0, extension="grow")
    with pytest.raises(ValueError, match="ids"):
        depth.depth_run(small_bert, ids[0], 0)
    with pytest.raises(ValueError, match="native"):
        list(depth.deeper_layers([], 3, "draw", 0))


def test_todays_decoders_are_built_narrowed_and_run_to_depth():
    """The Llama-style family keeps grouped-query attention when narrowed; its runs (and
    GPT-NeoX's parallel block) go to twice their depth with every variant, in the run's dtype."""
    assert set(depth.WIDTH_KEYS) == set(rc.real.FAMILIES)  # every family can be narrowed
    qwen2 = depth.build("qwen2", 1, width=32, heads=4, layers=2).network_config()
    assert (qwen2.d_model, qwen2.n_heads, qwen2.n_kv_heads) == (32, 4, 2)
    llama = depth.build("llama", 1, width=32, heads=4, layers=2)
    cfg = llama.network_config()
    assert (cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.n_layers) == (32, 4, 2, 2)
    assert cfg.norm == "rms" and cfg.gated and cfg.causal
    for model in (llama, depth.build("gpt_neox", 1, width=32, heads=4, layers=2)):
        ids = depth.texts(model, 2, 8)
        run = depth.depth_run(model, ids, 0, factors=(1, 2), float32=())
        assert run.curves["full"].shape == (2, 5)
        assert np.isfinite(run.curves["full"]).all()
        assert np.isfinite(run.constants["omega"]).all() and run.constants["k"].shape == (4,)
        assert run.causal and run.layernorm == "pre"
