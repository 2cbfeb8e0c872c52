"""rc.real.condition: the collapse condition on real weights.

Pins: MiniLM's per-head beta against a computation by hand from the safetensors file; the pure
network really is pure (no skip, MLP, LayerNorm, bias, mask) and computes sum_h P_h X W_h;
shrinking W_Q, W_K is shrinking the input; the shrink found is the smallest (the condition fails
just below it); the study's constants are rc.theory's; entropy limits; collapse rate of a cubic.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse.real import condition as C


@pytest.fixture(scope="module")
def minilm():
    try:
        return rc.real.load("all-MiniLM-L6-v2", True)
    except rc.real.ModelUnavailable as err:  # pragma: no cover - the book's environment has it
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def minilm_result(minilm):
    return C.model_condition(minilm, 2, 16, rescale_seq=1)


def _raw_minilm_weights():
    """MiniLM's state dict read straight from its safetensors file (not through transformers)."""
    from safetensors.numpy import load_file

    tensors = load_file(os.path.join(rc.real.minilm_path(), "model.safetensors"))
    return {k.removeprefix("bert."): v.astype(np.float64) for k, v in tensors.items()}


def _norm_1(A):
    return np.abs(A).sum(axis=0).max()


def _norm_inf(A):
    return np.abs(A).sum(axis=1).max()


def test_minilm_beta_matches_the_safetensors_weights(minilm, minilm_result):
    """The issue's check: per-head and per-layer beta from W_Q, W_K, W_V, W_O computed by hand."""
    w = _raw_minilm_weights()
    H, L = 12, 6
    expected = np.zeros((L, H))
    for l in range(L):
        p = f"encoder.layer.{l}.attention."
        # nn.Linear computes x @ weight.T: the input-by-output map is weight.T; head h owns 32
        # columns
        Wq, Wk, Wv = (w[p + f"self.{m}.weight"].T for m in ("query", "key", "value"))
        Wo = w[p + "output.dense.weight"].T
        dh = Wq.shape[1] // H
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            WQK = Wq[:, s] @ Wk[:, s].T
            Wh = Wv[:, s] @ Wo[s, :]
            expected[l, h] = _norm_1(WQK) * math.sqrt(_norm_1(Wh) * _norm_inf(Wh))
    np.testing.assert_allclose(minilm_result.beta, expected, rtol=1e-5)
    np.testing.assert_allclose(minilm_result.beta.max(axis=1), expected.max(axis=1), rtol=1e-5)
    assert (expected > 0).all() and expected.std() > 0  # real, varied weights, not a constant


def test_the_pure_network_is_pure_and_computes_sum_of_heads(minilm):
    san = C.pure_attention(minilm)
    cfg = san.config
    assert not cfg.skip and cfg.mlp == 0 and cfg.layernorm == "none" and not cfg.bias
    assert not cfg.final_layernorm and not cfg.causal and cfg.attention == "dot"
    assert cfg.dtype == torch.float64
    rc.theory.check_pure_attention(san)  # the theorem's object
    assert set(san.layers[0].weights()) == {"W_Q", "W_K", "W_V", "W_O"}
    X = C.real_inputs(minilm, 1, 12)[0]
    # layer 1 by hand: sum_h softmax(X W_Q W_K^T X^T / sqrt(d_qk)) X W_V W_O, nothing else
    b = san.layers[0]
    out = sum(
        torch.softmax(X @ b.W_Q[h] @ b.W_K[h].T @ X.T / math.sqrt(cfg.d_qk), -1)
        @ X
        @ b.W_V[h]
        @ b.W_O[h]
        for h in range(cfg.n_heads)
    )
    torch.testing.assert_close(san(X).hidden_states[1], out, rtol=1e-10, atol=1e-10)
    # the real model's attention weights, untouched
    full = minilm.network(torch.float32).san.layers[0]
    torch.testing.assert_close(b.W_Q, full.W_Q.double())


def test_decoder_and_relative_attention_become_plain_dot_product():
    for name in ("gpt2", "xlnet-base-cased"):
        cfg = C.pure_attention(rc.real.load(name, False, 0)).config
        assert not cfg.causal and cfg.attention == "dot" and not cfg.bias


def test_shrinking_queries_and_keys_is_shrinking_the_input(minilm):
    san, X, k = C.pure_attention(minilm), C.real_inputs(minilm, 2, 10), 7.0
    shrunk = C.pure_attention(minilm, shrink=k)
    for a, b in zip(shrunk(X).hidden_states, san(X / k).hidden_states):
        torch.testing.assert_close(a, b * k, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(
        rc.theory.layer_constants(shrunk, X),
        rc.theory.layer_constants(san, X / k) / k**2,
        rtol=1e-9,
        atol=0,
    )
    torch.testing.assert_close(
        rc.theory.beta(shrunk), rc.theory.beta(san) / k**2, rtol=1e-12, atol=0
    )


@pytest.mark.parametrize("condition", C.CONDITIONS)
def test_the_shrink_is_the_smallest(minilm, condition):
    X = C.real_inputs(minilm, 1, 12)
    san = C.pure_attention(minilm)
    assert not C.condition_holds(san, X, condition)
    k_holds, k_fails = C.smallest_shrink(san, X, condition, rtol=1e-2)
    assert 1 < k_fails < k_holds <= k_fails * (1 + 1e-2) * (1 + 1e-12)
    assert C.condition_holds(C.pure_attention(minilm, shrink=k_holds), X, condition)
    assert not C.condition_holds(C.pure_attention(minilm, shrink=k_fails), X, condition)
    assert not C.condition_holds(
        C.pure_attention(minilm, shrink=k_fails / 1.5), X, condition
    )  # and below


def test_shrink_is_one_where_the_condition_already_holds():
    san = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8, init_scale=0.05), seed=0)
    X = rc.theory.unit_residual_tokens(6, 8, generator=torch.Generator().manual_seed(0))[None]
    assert C.condition_holds(san, X, "layer")
    assert C.smallest_shrink(san, X, "layer") == (1.0, 0.0)


def test_the_result_holds_rc_theory_quantities(minilm, minilm_result):
    r = minilm_result
    san, X = C.pure_attention(minilm), C.real_inputs(minilm, 2, 16)
    np.testing.assert_allclose(r.constants, rc.theory.layer_constants(san, X).numpy(), rtol=1e-12)
    np.testing.assert_allclose(r.gamma, rc.theory.gamma(san, X).numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        r.relative, rc.theory.tracked_relative_residual(san, X).T.numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(
        r.head_constants.max(axis=1), r.constants, rtol=1e-12
    )  # the largest head
    assert (r.floor[:, None] <= r.constants * (1 + 1e-12)).all()  # kappa >= 1, column sums >= 1
    full = np.sqrt(r.constants.max(axis=0)) * r.r0
    np.testing.assert_allclose(r.full, full, rtol=1e-12)
    np.testing.assert_array_equal(r.layer_holds(), (r.constants < 1).all(axis=1))


def test_minilm_fails_the_condition_and_still_collapses(minilm_result):
    r = minilm_result
    assert not r.layer_holds().any() and (r.full > 1).all()
    assert r.typical()[-1] < 1e-12 < r.typical()[0]
    # at the smallest shrink where the condition holds, attention is uniform to many digits
    assert min(r.entropy["layer"].min(), r.entropy["full"].min()) > 0.999
    assert r.entropy["real"].min() < 0.9  # the pretrained model's own attention is not


def test_attention_entropy_limits():
    cfg = rc.san.SANConfig(n_layers=2, n_heads=2, d_model=8)
    uniform = rc.san.SAN(cfg.replace(init_scale=0.0), seed=0)
    X = torch.randn(3, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(C.attention_entropy(uniform, X), torch.ones(2, dtype=torch.float64))
    hard = rc.san.SAN(cfg.replace(init_scale=300.0), seed=0)
    assert C.attention_entropy(hard, X)[0] < 0.2


def test_collapse_rate_of_a_cubic_cascade():
    rho = np.array([1.0] + [0.5 ** (3**l) for l in range(1, 6)])  # rho_l = a^(3^l)
    r = C.ModelCondition(
        "x",
        "x",
        False,
        1,
        1,
        *(np.ones((1, 1)),) * 4,
        np.ones(1),
        np.ones(1),
        np.ones(1),
        np.tile(rho, (2, 1)),
    )
    assert abs(r.collapse_rate() - math.log(3)) < 1e-9
    assert r.floor_layer(1e-12) == 4
    np.testing.assert_allclose(
        r.step_ratios(), [3.0] * 4, rtol=1e-12
    )  # a pure cube: 3 at every step


def _condition_of(rho):
    return C.ModelCondition(
        "x",
        "x",
        False,
        1,
        1,
        *(np.ones((1, 1)),) * 4,
        np.ones(1),
        np.ones(1),
        np.ones(1),
        np.tile(rho, (2, 1)),
    )


def test_step_ratios_fall_to_three_with_a_factor_in_front():
    """rho_(l+1) = K rho_l^3 with K < 1: each ratio is 3 + log K / log rho_l, above 3 and falling
    to it."""
    rho, K = [1.0, 0.5], 0.1
    for _ in range(4):
        rho.append(K * rho[-1] ** 3)
    ratios = _condition_of(np.array(rho)).step_ratios()
    np.testing.assert_allclose(
        ratios, [3 + math.log(K) / math.log(x) for x in rho[1:-1]], rtol=1e-12
    )
    assert (ratios > 3).all() and (np.diff(ratios) < 0).all()
    # a residual that does not fall, or too few layers, gives no ratio
    assert _condition_of(np.array([1.0, 1.0, 1.0])).step_ratios().size == 0
    assert _condition_of(np.array([1.0, 0.5])).step_ratios().size == 0


def test_study_fractions_and_lookup(minilm_result):
    study = C.ConditionStudy([minilm_result], 2, 16)
    f = study.fractions()
    # MiniLM: 6 layers x 12 heads, 2 sequences; the condition holds nowhere
    assert f["layers"] == (0, 6) and f["heads"] == (0, 72) and f["full"] == (0, 2)
    assert (minilm_result.constants > 1).all()
    assert study.by_name("all-MiniLM-L6-v2") is minilm_result
    with pytest.raises(KeyError, match="gpt2"):
        study.by_name("gpt2")


def test_bad_inputs():
    with pytest.raises(TypeError, match="model"):
        C.pure_attention(None)
    with pytest.raises(ValueError, match="names"):
        C.condition_models(0, ["no-such-model"])
    san = rc.san.SAN(rc.san.SANConfig(n_layers=1, n_heads=1, d_model=4), seed=0)
    with pytest.raises(ValueError, match="condition"):
        C.smallest_shrink(san, torch.zeros(1, 3, 4, dtype=torch.float64), "strict")
    with pytest.raises(ValueError, match="X"):
        C.smallest_shrink(san, torch.zeros(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="skip"):
        C.condition_holds(
            rc.san.SAN(rc.san.SANConfig(n_layers=1, d_model=4, skip=True), seed=0),
            torch.zeros(1, 3, 4, dtype=torch.float64),
        )
