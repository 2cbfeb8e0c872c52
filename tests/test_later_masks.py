"""rc.later.masks: masked attention and LayerNorm's equilibria (Wu et al. 2024), section 2 of "After
the paper"."""

import math

import numpy as np
import pytest
import torch
from conftest import random_tokens

import rankbook as book
import rankcollapse as rc

M = rc.later.masks


def test_causal_first_token_never_depends_on_later_tokens(gen):
    cfg = rc.san.SANConfig(n_layers=5, n_heads=2, d_model=8, **M.mask_options("causal", 3))
    m = rc.san.SAN(cfg, seed=1)
    X = random_tokens(gen, 7, 8)
    Y = X.clone()
    Y[1:] = random_tokens(gen, 6, 8)
    with torch.no_grad():
        for a, b in zip(m(X).hidden_states, m(Y).hidden_states):
            assert torch.equal(a[0], b[0])
        # and a causal window of w: token i depends on tokens i-(w-1)(l)..i only after l layers
        w = rc.san.SAN(
            rc.san.SANConfig(
                n_layers=2, n_heads=2, d_model=8, **M.mask_options("causal window", 2)
            ),
            seed=1,
        )
        Z = X.clone()
        Z[:4] = random_tokens(
            gen, 4, 8
        )  # tokens 0..3 changed: token 6 sees back to token 4 after two layers
        assert torch.equal(w(X).last_hidden_state[6], w(Z).last_hidden_state[6])
        assert not torch.equal(w(X).last_hidden_state[5], w(Z).last_hidden_state[5])


def test_a_window_of_n_is_full_attention():
    kw = dict(n_layers=6, n_heads=2, d_model=8, n_tokens=5, samples=2, seed=0)
    st = M.mask_study(
        masks=("full", "window", "causal", "causal window"),
        window=5,
        generator=torch.Generator().manual_seed(2),
        **kw,
    )
    assert np.array_equal(st.curves["window"], st.curves["full"])
    assert np.array_equal(st.curves["causal window"], st.curves["causal"])


def test_fitted_rate_of_a_geometric_curve():
    L = np.arange(31)
    curve = 10.0 ** (
        -0.5 * L
    )  # falls to the float64 floor: only the part above FIT_FLOOR is fitted
    curve = np.maximum(curve, 1e-16)
    st = M.MaskStudy({"full": np.array([curve, curve])}, window=2, n_tokens=4, samples=2)
    assert math.isclose(st.rate("full"), -0.5, rel_tol=1e-9)
    assert st.depth_to_collapse("full") == 13  # 10^-6.5 < 1e-6 first at layer 13
    flat = M.MaskStudy({"full": np.ones((1, 5)) * 1e-14}, window=2, n_tokens=4, samples=1)
    assert math.isnan(flat.rate("full"))


@pytest.fixture(scope="module")
def study():
    return M.mask_study(
        window=2,
        n_layers=16,
        n_heads=2,
        d_model=16,
        n_tokens=12,
        samples=2,
        seed=0,
        generator=torch.Generator().manual_seed(3),
    )


def test_masks_slow_collapse_but_none_stops_it(study):
    assert study.falls_everywhere() and study.ordering_holds()
    # in 16 layers the two-sided window has not reached LEVEL: a decline, not a collapse
    assert study.depth_to_collapse("window") is None and not study.collapses_everywhere()
    assert study.depth_to_collapse("full") is not None and study.collapsed()[0] == "full"
    r = {m: -study.rate(m) for m in M.MASKS}
    assert (
        r["full"] > 3 * r["causal"]
        and r["causal"] > r["window"] > 0
        and r["causal"] > r["causal window"]
    )
    # full attention's decline accelerates layer by layer (doubly exponential) before the floor
    drops = study.drops("full")
    assert len(drops) >= 2 and np.all(np.diff(drops) > 0)


def test_cube_tokens_are_layernorm_fixed_and_of_their_rank(gen):
    for k in (1, 3, 5):
        X = M.cube_tokens(k, 8, gen)
        assert X.shape == (2**k, 8)
        assert torch.allclose(X.mean(-1), torch.zeros(2**k, dtype=torch.float64), atol=1e-13)
        assert torch.allclose(
            X.var(-1, unbiased=False), torch.ones(2**k, dtype=torch.float64), atol=1e-12
        )
        assert M.numerical_rank(X) == k == int(torch.linalg.matrix_rank(X))


def test_the_cube_is_an_equilibrium_with_layernorm_and_collapses_without(gen):
    X = M.cube_tokens(3, 8, gen)
    net = M.sharp_attention_network(8, 1, 8.0, layernorm=False)
    with torch.no_grad():
        out = net(X)
    Y, P = out.last_hidden_state, out.attentions[0][0]
    c = float((Y * X).sum() / (X * X).sum())
    assert 0 < c < 1 and torch.allclose(Y, c * X, atol=1e-12)  # the cube's symmetry: P X = c X
    assert torch.allclose(P @ X, Y, atol=1e-12)
    eps = rc.ops.LN_EPS
    with torch.no_grad():
        once = M.sharp_attention_network(8, 1, 8.0, layernorm=True)(X).last_hidden_state
    # LN(c X) = c X / sqrt(c^2 + eps): the equilibrium up to eps
    assert torch.allclose(once, X * c / math.sqrt(c * c + eps), atol=1e-12)
    ln = M.ln_counterexample(
        ranks=(3, 4),
        d_model=8,
        n_layers=40,
        beta=8.0,
        noise=0.1,
        generator=torch.Generator().manual_seed(4),
    )
    assert ln.holds() and ln.kept() == [3, 4]
    for r in ln.rows:
        assert r["defect"] < 1e-5 and r["ln_random_value"][0] == 1
        # the random value matrix continued to DEEPER times the depth: still one line
        assert r["ln_random_value_deep"][0] == 1 and r["ln_random_value_deep"][1] > 0.9
        # without LayerNorm: the residual (the paper's measure) collapses, the shape does not
        assert (
            r["no_ln_shrink"] < M.LEVEL and r["no_ln_shape"] > 0.999 and 0 < r["no_ln_depth"] <= 40
        )
    S = ln.summary()
    assert S["random_ranks"] == [1, 1] and S["random_rank_max_deep"] == 1
    assert S["random_res_min_deep"] == min(r["ln_random_value_deep"][1] for r in ln.rows)
    assert (
        S["ranks"] == [3, 4]
        and S["kept"] == [3, 4]
        and S["defect"] == max(r["defect"] for r in ln.rows)
    )
    assert (
        S["random_rank_max"] == 1
        and S["no_ln_shape"] > 0.999
        and S["eps"] == rc.san.SANConfig().ln_eps
    )
    assert S["no_ln_depth"] == max(r["no_ln_depth"] for r in ln.rows)


def test_numerical_rank():
    assert M.numerical_rank(torch.zeros(3, 4)) == 0
    X = torch.ones(4, 1, dtype=torch.float64) @ torch.arange(1.0, 4.0, dtype=torch.float64)[None]
    assert M.numerical_rank(X) == 1
    assert M.numerical_rank(torch.eye(4, dtype=torch.float64)) == 4


def test_refuses_bad_input(gen):
    with pytest.raises(ValueError, match="mask"):
        M.mask_options("diagonal", 2)
    with pytest.raises(ValueError, match="rank"):
        M.cube_tokens(8, 8, gen)
    with pytest.raises(ValueError, match="value"):
        M.sharp_attention_network(4, 2, 1.0, layernorm=True, value=torch.eye(3))
    with pytest.raises(TypeError, match="generator"):
        M.ln_counterexample(ranks=(2,), d_model=4, n_layers=2, beta=1.0, noise=0.0, generator=0)


def test_the_window_exercise_reference_is_the_core_mask(gen):
    """The exercise's reference equals the attention the core computes with SANConfig.window."""
    ref = book.checks.EXERCISES["later.window_attention"].reference
    m = rc.san.SAN(rc.san.SANConfig(n_layers=1, n_heads=1, d_model=4, window=2), seed=0)
    X = random_tokens(gen, 6, 4)
    b = m.layers[0]
    with torch.no_grad():
        S = (X @ b.W_Q[0]) @ (X @ b.W_K[0]).T / math.sqrt(b.cfg.d_qk)
        assert torch.allclose(ref(S, 2), m(X).attentions[0][0], atol=1e-14)
    i = torch.arange(6)
    assert torch.equal(ref(S, 2) > 0, (i[:, None] - i[None, :]).abs() < 2)


def test_collapse_and_rates_on_hand_made_curves():
    """Straight lines in log10: the fitted rate, the per-layer drops, which masks reach LEVEL."""

    def study(rates):
        return M.MaskStudy(
            {m: np.array([10.0 ** (-r * np.arange(25))]) for m, r in rates.items()},
            window=2,
            n_tokens=4,
            samples=1,
        )

    st = study({"full": 1, "causal": 0.3, "window": 0.01, "causal window": 0.02})
    assert (
        st.collapsed() == ["full", "causal"] and st.depth_to_collapse("causal") == 21
    )  # 10^-6.3 < 1e-6
    assert st.falls_everywhere() and st.ordering_holds() and not st.collapses_everywhere()
    assert np.allclose(st.drops("causal"), 0.3) and len(st.drops("causal")) == 24
    assert len(st.drops("full")) == 12  # the layers above FIT_FLOOR = 1e-12 only
    assert math.isclose(st.rate("window"), -0.01, rel_tol=1e-9)
    # a local mask faster than the causal one breaks the paper's ordering
    assert not study({"full": 1, "causal": 0.3, "causal window": 0.5}).ordering_holds()
    flat = study({"full": 0.0})
    assert not flat.falls_everywhere() and flat.collapsed() == []


def test_window_mixing_rate_is_the_diffusion_of_uniform_window_attention():
    """The second largest eigenvalue modulus of uniform window attention: by hand for three tokens
    with a window of 2 (rows (1/2, 1/2, 0), (1/3, 1/3, 1/3), (0, 1/2, 1/2): eigenvalues 1, 1/2
    on (1, 0, -1), and -1/6 from the trace), about fourfold slower each time the sequence
    doubles, none at a window of one token, and bad input refused."""
    assert math.isclose(M.window_mixing_rate(3, 2), math.log10(2), rel_tol=1e-9)
    ratio = M.window_mixing_rate(32, 3) / M.window_mixing_rate(64, 3)
    assert 3.8 < ratio < 4.4
    assert M.window_mixing_rate(8, 1) == 0.0  # the identity never mixes
    with pytest.raises(ValueError, match="n_tokens"):
        M.window_mixing_rate(1, 2)
    with pytest.raises((ValueError, TypeError), match="window"):
        M.window_mixing_rate(8, 0)
