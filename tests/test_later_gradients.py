"""rc.later.gradients: the query/key gradients at initialisation (Noci et al. 2022), section 1 of
"After the paper"."""

import math

import numpy as np
import pytest
import torch
from conftest import random_tokens

import rankcollapse as rc

G = rc.later.gradients


def pure(seed=0, **kw):
    base = dict(n_layers=4, n_heads=2, d_model=8)
    base.update(kw)
    return rc.san.SAN(rc.san.SANConfig(**base), seed=seed)


def test_identical_tokens_give_the_queries_and_keys_no_gradient(gen):
    """Every key gives a query the same score when the tokens are equal: the softmax ignores a
    change of W_Q or W_K (up to rounding), while the values' gradient stays of order one."""
    m = pure(n_layers=1)
    x = random_tokens(gen, 1, 8)
    X, D = x.expand(6, 8).clone(), random_tokens(gen, 6, 8)
    for skip in (False, True):
        g = G.layer_gradients(m, X, D, skip=skip)
        assert g["value"][0] > 1e-2
        assert g["query"][0] < 1e-12 * g["value"][0] and g["key"][0] < 1e-12 * g["value"][0]
        assert g["residual"][0] < 1e-15  # the mean of equal rows, up to rounding
    spread = G.layer_gradients(m, random_tokens(gen, 6, 8), D, skip=False)
    assert spread["query"][0] > 1e-3 * spread["value"][0]  # distinct tokens: a real gradient


def test_branch_states_are_the_san_and_a_scaled_branch_is_a_scaled_output_map(gen):
    X = random_tokens(gen, 5, 8)
    m = pure(seed=3)
    skip = rc.san.SAN(m.config.replace(skip=True), seed=3)
    with torch.no_grad():
        for a, b in zip(G.branch_states(m, X, skip=False)[0], m(X).hidden_states):
            assert torch.equal(a, b)
        for a, b in zip(G.branch_states(m, X, skip=True)[0], skip(X).hidden_states):
            assert torch.allclose(a, b, atol=1e-13)
        assert all(torch.equal(h, X) for h in G.branch_states(m, X, skip=True, branch_scale=0.0)[0])
        scaled = G.branch_states(m, X, skip=True, branch_scale=0.3)[0][-1]
        for block in skip.layers:
            block.W_O.mul_(0.3)
        assert torch.allclose(scaled, skip(X).last_hidden_state, atol=1e-13)


def test_gradient_matches_a_finite_difference(gen):
    """The autograd norm is the gradient of <G, X_L>: its inner product with a direction E equals
    the central difference of the loss along E (an independent computation)."""
    m = pure(n_layers=3, seed=5)
    X, D = random_tokens(gen, 6, 8), random_tokens(gen, 6, 8)
    block = m.layers[1]
    E = random_tokens(gen, *block.W_Q.shape)

    def loss():
        with torch.no_grad():
            return float((D * G.branch_states(m, X, skip=True, branch_scale=0.5)[0][-1]).sum())

    hidden, _ = G.branch_states(m, X, skip=True, branch_scale=0.5)
    (grad,) = torch.autograd.grad((D * hidden[-1]).sum(), [block.W_Q])
    h = 1e-6
    with torch.no_grad():
        block.W_Q.add_(h * E)
        up = loss()
        block.W_Q.sub_(2 * h * E)
        down = loss()
        block.W_Q.add_(h * E)
    assert math.isclose((up - down) / (2 * h), float((grad * E).sum()), rel_tol=1e-6, abs_tol=1e-9)
    g = G.layer_gradients(m, X, D, skip=True, branch_scale=0.5)
    assert math.isclose(g["query"][1], float(grad.norm()), rel_tol=1e-12)


@pytest.fixture(scope="module")
def study():
    return G.gradient_study(
        n_layers=12,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=2,
        seed=0,
        generator=torch.Generator().manual_seed(1),
    )


def test_study_pure_attention_starves_and_scaled_branches_keep_the_gradient(study):
    pure_ratio = study.typical("pure", "query/value")
    assert pure_ratio[0] > 1e-2 and pure_ratio[-1] < G.VANISHED
    # the starving follows the collapse: past the layer where the input's residual vanished
    gone = rc.stats.first_below(study.typical("pure", "residual"), 1e-8)
    assert gone is not None and (pure_ratio[gone:] < 1e-4).all()
    assert study.typical("scaled", "query/value").min() > 1e-2
    assert study.typical("scaled", "residual").min() > 0.5
    v = study.summary()
    assert v["depth"] == 12 and v["branch_scale"] == pytest.approx(1 / math.sqrt(12))
    assert v["qv_pure_last"] == pytest.approx(pure_ratio[-1]) and v["qv_pure_last"] < G.VANISHED
    assert v["vanished_layer"] == rc.stats.first_below(pure_ratio, G.VANISHED) + 1
    assert v["res_at_vanished"] == pytest.approx(
        study.typical("pure", "residual")[v["vanished_layer"] - 1]
    )
    assert v["value_pure_last"] > 0.1  # the values keep their gradient
    assert v["qv_scaled_min"] == pytest.approx(study.typical("scaled", "query/value").min())
    assert v["res_skip_last"] < v["res_skip_first"]  # skips alone: the residual still falls
    assert all(isinstance(x, (int, float)) or x is None for x in v.values())


def test_summary_without_a_vanished_layer():
    """A shallow network keeps its query gradient: no vanished layer, and no residual there."""
    st = G.gradient_study(
        n_layers=1,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=1,
        seed=0,
        generator=torch.Generator().manual_seed(1),
    )
    v = st.summary()
    assert v["vanished_layer"] is None and math.isnan(v["res_at_vanished"])


def test_study_is_deterministic(study):
    again = G.gradient_study(
        n_layers=12,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=2,
        seed=0,
        generator=torch.Generator().manual_seed(1),
    )
    for arch in G.ARCHITECTURES:
        for k, v in study.curves[arch].items():
            assert np.array_equal(v, again.curves[arch][k])
    assert study.summary() == again.summary()


def test_refuses_what_it_does_not_measure(gen):
    X = random_tokens(gen, 4, 8)
    with pytest.raises(ValueError, match="mlp"):
        G.branch_states(pure(mlp=4), X, skip=False)
    with pytest.raises(ValueError, match="layernorm"):
        G.layer_gradients(pure(layernorm="post"), X, X, skip=True)
    with pytest.raises(ValueError, match="G must have the shape"):
        G.layer_gradients(pure(), X, X[:3], skip=True)
    with pytest.raises(ValueError, match="branch_scale"):
        G.branch_states(pure(), X, skip=True, branch_scale=-1.0)
