"""rankcollapse.lipschitz: the bracket on the MLP's Lipschitz constant, sensitivity, gradient
spread."""

import math

import pytest
import torch

import rankcollapse as rc
from rankcollapse import lipschitz as lp


def small_mlp_san(activation="relu", scale=1.0, seed=0, **kw):
    cfg = rc.san.SANConfig(
        n_layers=2, n_heads=2, d_model=8, mlp=16, mlp_scale=scale, activation=activation, **kw
    )
    return rc.san.SAN(cfg, seed=seed)


def test_activation_slopes():
    assert lp.activation_slope("relu") == (0.0, 1.0)
    lo, hi = lp.activation_slope("gelu")
    t = torch.linspace(-6, 6, 20001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.gelu(t).sum(), t)
    assert math.isclose(hi, float(g.max()), rel_tol=1e-6) and math.isclose(
        lo, float(g.min()), rel_tol=1e-5
    )
    with pytest.raises(ValueError, match="activation"):
        lp.activation_slope("tanh")


def test_envelope_bounds_every_activation_pattern(gen):
    W1 = torch.randn(5, 12, generator=gen, dtype=torch.float64)
    W2 = torch.randn(12, 4, generator=gen, dtype=torch.float64)
    B = lp.jacobian_envelope(W1, W2, (0.0, 1.0))
    assert torch.all(B <= (W1.abs() @ W2.abs()) + 1e-12)
    for _ in range(200):
        D = (torch.rand(12, generator=gen, dtype=torch.float64) > 0.5).to(torch.float64)
        assert torch.all((W1 * D) @ W2 <= B + 1e-12) and torch.all(-((W1 * D) @ W2) <= B + 1e-12)


@pytest.mark.parametrize("slopes", [(0.0, 1.0), lp.activation_slope("gelu"), (1.0, -0.5)])
def test_envelope_is_the_largest_sum_term_by_term(slopes, gen):
    """The four products give B_kj = max(sum_m max(lo t, hi t), -sum_m min(lo t, hi t)) over the
    terms t = W1_km W2_mj, as the definition builds it term by term (and attains it: each D_m at
    an end of its interval)."""
    W1 = torch.randn(7, 30, generator=gen, dtype=torch.float64)
    W2 = torch.randn(30, 5, generator=gen, dtype=torch.float64)
    lo, hi = slopes
    terms = W1.unsqueeze(-1) * W2.unsqueeze(0)
    top = torch.maximum(lo * terms, hi * terms).sum(dim=1)
    bottom = torch.minimum(lo * terms, hi * terms).sum(dim=1)
    want = torch.maximum(top, -bottom)
    assert torch.allclose(lp.jacobian_envelope(W1, W2, slopes), want, rtol=1e-12, atol=1e-12)
    D_top = torch.full((30,), min(slopes), dtype=torch.float64)  # attains top[0, 0]
    D_top[terms[0, :, 0] > 0] = max(slopes)
    assert torch.isclose((W1[0] * D_top) @ W2[:, 0], top[0, 0], rtol=1e-12)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_lower_bound_never_exceeds_upper_bound(activation, scale, gen):
    model = small_mlp_san(activation, scale, bias=True)
    X = torch.randn(3, 6, 8, generator=gen, dtype=torch.float64)
    est = lp.mlp_lipschitz(model, X, steps=30, points=2)
    assert est.lower.shape == est.upper.shape == (2,)
    assert torch.all(est.lower > 0) and torch.all(est.lower <= est.upper * (1 + 1e-9))
    assert est.norm == "l1inf" and est.n == 6 and torch.all(est.ratio >= 1 - 1e-9)


def test_random_pairs_never_beat_the_upper_bound(gen):
    model = small_mlp_san("gelu", 1.5, bias=True)
    upper = lp.lipschitz_upper_bound(model)
    f = lp.mlp_map(model, 0)
    for _ in range(100):
        X = 3 * torch.randn(5, 8, generator=gen, dtype=torch.float64)
        Y = X + torch.randn(5, 8, generator=gen, dtype=torch.float64) * torch.rand(
            1, generator=gen, dtype=torch.float64
        )
        ratio = rc.residual.composite_norm(f(X) - f(Y)) / rc.residual.composite_norm(X - Y)
        assert ratio <= upper[0] * (1 + 1e-9)


def test_linear_row_map_lower_bound_is_close_to_the_composite_norm(gen):
    M = torch.randn(6, 6, generator=gen, dtype=torch.float64)
    Z = torch.randn(400, 6, generator=gen, dtype=torch.float64)
    lower = lp.lipschitz_lower_bound(lambda A: A @ M, Z, steps=0)
    exact = float(rc.residual.composite_norm(M))  # the constant for x -> x M as n grows
    assert lower <= exact * (1 + 1e-9) and lower >= 0.9 * exact


def test_bounds_scale_quadratically_with_mlp_scale(gen):
    a = lp.lipschitz_upper_bound(small_mlp_san(scale=1.0))
    b = lp.lipschitz_upper_bound(small_mlp_san(scale=3.0))
    torch.testing.assert_close(b, 9 * a)
    # same through scale_weights
    c = lp.lipschitz_upper_bound(small_mlp_san(scale=1.0).scale_weights(3.0, which="mlp"))
    torch.testing.assert_close(c, 9 * a)


def test_mlp_inputs_match_the_forward_pass(gen):
    for kw in (
        dict(),
        dict(skip=True, layernorm="post"),
        dict(skip=True, layernorm="pre", bias=True),
    ):
        model = small_mlp_san(**kw)
        X = torch.randn(6, 8, generator=gen, dtype=torch.float64)
        Z = lp.mlp_inputs(model, X)
        assert len(Z) == 2
        if not kw:  # the paper's model: layer output = MLP(SA(X))
            out = model(X).hidden_states
            torch.testing.assert_close(model.layers[0].mlp(Z[0]), out[1])
            torch.testing.assert_close(model.layers[1].mlp(Z[1]), out[2])


def test_perturbation_gain_shapes_and_scale_invariance(gen):
    model = small_mlp_san(scale=1.0)
    X = torch.randn(3, 6, 8, generator=gen, dtype=torch.float64)
    g = lp.perturbation_gain(model, X, directions=5, seed=1)
    assert g.shape == (3, 5) and torch.all(g > 0)
    assert lp.perturbation_gain(model, X[0], directions=5, seed=1).shape == (5,)
    # ReLU MLP without biases is positively homogeneous: scaling the last layer's MLP output
    # changes the absolute gain but not the relative one
    model2 = small_mlp_san(scale=1.0)
    with torch.no_grad():
        model2.layers[-1].W_2.mul_(10.0)
    torch.testing.assert_close(lp.perturbation_gain(model2, X, directions=5, seed=1), g)
    ga = lp.perturbation_gain(model, X, directions=5, seed=1, relative=False)
    ga2 = lp.perturbation_gain(model2, X, directions=5, seed=1, relative=False)
    torch.testing.assert_close(ga2, 10 * ga)


def test_gradient_variance(gen):
    model = small_mlp_san()
    X, t, r = lp.memorization_task(6, 5, 8, seed=0)
    G = lp.per_example_gradients(model, X, t, r)
    assert G.shape == (6, sum(p.numel() for p in model.parameters()))
    noise = lp.gradient_variance(model, X, t, r)
    manual = float(((G - G.mean(0)) ** 2).sum() / 5)
    assert math.isclose(noise.variance, manual, rel_tol=1e-12)
    assert noise.noise_to_signal > 0
    # per-example gradient agrees with autograd on the summed loss
    model.zero_grad()
    loss = sum(0.5 * ((model(x).last_hidden_state @ r - tt) ** 2).mean() for x, tt in zip(X, t))
    loss.backward()
    total = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    torch.testing.assert_close(G.sum(0), total)


def test_bad_input():
    model = small_mlp_san()
    with pytest.raises(ValueError, match="no MLP"):
        lp.lipschitz_upper_bound(rc.san.SAN(rc.san.SANConfig(n_layers=1, d_model=4), seed=0))
    with pytest.raises(TypeError, match="model"):
        lp.mlp_lipschitz("not a model", torch.zeros(2, 8))
    with pytest.raises(ValueError, match="X"):
        lp.perturbation_gain(model, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="targets"):
        lp.per_example_gradients(
            model, torch.zeros(2, 4, 8, dtype=torch.float64), torch.zeros(2, 3), torch.zeros(8)
        )
    with pytest.raises(TypeError, match="f must be"):
        lp.lipschitz_lower_bound(3, torch.zeros(2, 8))
    with pytest.raises(ValueError, match="layer"):
        lp.mlp_map(model, 5)


@pytest.mark.parametrize("layernorm", ["none", "post", "pre"])
@pytest.mark.parametrize("skip", [False, True])
def test_mlp_inputs_are_what_the_forward_pass_feeds_the_mlp(layernorm, skip, gen):
    """Each layer's output, rebuilt from mlp_inputs by the layer's own MLP, equals the forward
    pass."""
    model = small_mlp_san("gelu_tanh", 1.0, bias=True, skip=skip, layernorm=layernorm)
    X = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64)
    out = model(X)
    for l, (block, Z) in enumerate(zip(model.layers, lp.mlp_inputs(model, X))):
        Y = block.attention_sublayer(out.hidden_states[l])[0]
        M = block.mlp(Z)
        Y = Y + M if skip else M
        if layernorm == "post":
            Y = rc.ops.layer_norm_sigma(Y, block.ln2_gain, block.ln2_shift)[0]
        assert torch.allclose(Y, out.hidden_states[l + 1], atol=1e-12)
    if layernorm == "pre":  # the MLP sees LN(Y), not Y
        Y0 = model.layers[0].attention_sublayer(X)[0]
        assert not torch.allclose(lp.mlp_inputs(model, X)[0], Y0)


def test_tanh_gelu_slopes_enclose_its_derivative():
    lo, hi = lp.activation_slope("gelu_tanh")
    t = torch.linspace(-8, 8, 400001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(rc.san.activation("gelu_tanh")(t).sum(), t)
    assert lo <= float(g.min()) and float(g.max()) <= hi
    assert hi - float(g.max()) < 1e-7 and float(g.min()) - lo < 1e-7
    assert lp.activation_slope("gelu") != (lo, hi)
