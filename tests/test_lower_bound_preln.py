"""rc.lower_bound_preln: the book's bound with LayerNorm before each branch (section 8 of the
lower-bound chapter).

Pins: the bound never above the measured residual on random pre-LN networks (the core SAN, with
MLPs, biases, masks, RMSNorm; and the module's batched forward, 10,000 networks to depth 256 in the
slow test; a sample of 30 networks, forward pass and bound, recomputed at 60 digits with mpmath);
the antipodal construction loses exactly its
step per layer and reaches 0; at n = 2 in the hard limit the bound's step is the construction's;
the activations' Lipschitz constants are upper bounds; bad input is refused by name.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
import torch

from rankcollapse import lower_bound_preln as PL
from rankcollapse.san import SAN, SANConfig


def _random_san(i, gen):
    H = int(torch.randint(1, 4, (1,), generator=gen))
    d = 2 * H * int(torch.randint(1, 4, (1,), generator=gen))
    cfg = SANConfig(
        n_layers=int(torch.randint(1, 8, (1,), generator=gen)), n_heads=H, d_model=d, skip=True,
        layernorm="pre", mlp=2 * d * (i % 2), bias=bool(i % 3 == 0), causal=bool(i % 4 == 1),
        activation=("relu", "gelu", "gelu_tanh")[i % 3], norm=("layer", "rms")[(i // 2) % 2],
        init_scale=10 ** (2 * float(torch.rand(1, generator=gen)) - 1), parallel=bool(i % 5 == 2),
    )  # fmt: skip
    return SAN(cfg, seed=i)


def test_the_bound_holds_on_random_core_networks():
    gen = torch.Generator().manual_seed(0)
    worst, positive = math.inf, 0
    for i in range(40):
        net = _random_san(i, gen)
        n = int(torch.randint(2, 7, (1,), generator=gen))
        X = torch.randn(n, net.config.d_model, generator=gen, dtype=torch.float64)
        X = X * 10 ** (3 * float(torch.rand(1, generator=gen)))
        with torch.no_grad():
            measured = torch.stack([PL.residual_l2(h) for h in net(X).hidden_states])
        bound = PL.preln_bound(net, X)
        assert (bound <= measured * (1 + 1e-9)).all()
        assert bound[0] == measured[0]
        keep = bound[1:] > 0
        positive += int(keep.sum())
        if keep.any():
            worst = min(worst, float((measured[1:][keep] / bound[1:][keep]).min()))
    assert positive > 20 and worst >= 1 - 1e-9  # compared where the bound says something


def test_the_relative_bound_holds_on_random_core_networks():
    """Each layer moves the mean token by at most mean_steps, and b_l / ||m_l|| is never below the
    relative bound (MLPs, biases, causal masks, RMSNorm, parallel layers)."""
    gen = torch.Generator().manual_seed(4)
    moved, positive = 0.0, 0
    for i in range(40):
        net = _random_san(i, gen)
        n = int(torch.randint(2, 7, (1,), generator=gen))
        X = torch.randn(n, net.config.d_model, generator=gen, dtype=torch.float64)
        X = X * 10 ** (3 * float(torch.rand(1, generator=gen))) + torch.randn(
            net.config.d_model, generator=gen, dtype=torch.float64
        ) * 10 ** (3 * float(torch.rand(1, generator=gen)))
        with torch.no_grad():
            hidden = net(X).hidden_states
        means = torch.stack([h.mean(-2) for h in hidden])
        steps = torch.linalg.vector_norm(means[1:] - means[:-1], dim=-1)
        mu = PL.mean_steps(net)
        assert (steps <= mu * (1 + 1e-9)).all()
        moved = max(moved, float((steps / mu).max()))
        measured = torch.stack([PL.residual_l2(h) for h in hidden]) / torch.linalg.vector_norm(
            means, dim=-1
        )
        bound = PL.preln_relative_bound(net, X)
        assert (bound <= measured * (1 + 1e-9)).all()
        positive += int((bound[1:] > 0).sum())
    assert positive > 20 and moved > 0.05  # the bounds say something, the check compares sizes


def test_the_batched_networks_never_violate_the_bound():
    total = viol = 0
    for meas, bound in PL.random_networks(600, seed=1, max_L=24):
        viol += int((bound[:, 1:] > meas[:, 1:] * (1 + 1e-9)).sum())
        total += meas.shape[0]
    assert total == 600 and viol == 0


@pytest.mark.slow
def test_10000_batched_networks_to_depth_256():
    total = viol = 0
    for seed, count, max_L in ((20, 8000, 32), (21, 2000, 256)):
        for meas, bound in PL.random_networks(count, seed=seed, max_L=max_L):
            viol += int((bound[:, 1:] > meas[:, 1:] * (1 + 1e-9)).sum())
            total += meas.shape[0]
    assert total == 10_000 and viol == 0


def test_the_construction_loses_exactly_its_step_and_reaches_zero():
    d, omega, a, L = 8, 0.3, 2.0, 6
    step = PL.construction_step(d, omega, a)
    net = PL.construction(L + 2, d, omega, a)
    X = PL.antipodal_tokens(4, d, L * step)
    b = [float(PL.residual_l2(h)) for h in net(X).hidden_states]
    assert b[: L + 1] == pytest.approx([(L - l) * step for l in range(L + 1)], abs=1e-9 * step)
    assert max(b[L:]) < 1e-9 * step  # collapsed, and it stays collapsed
    # at n = 2 the bound's step is the construction's up to tanh(2 eps) / tanh(eps)
    two = PL.antipodal_tokens(2, d, 1.0)
    bound_step = PL.layer_steps(PL.construction(1, d, omega, a), 2).item()
    eps = a * d / math.sqrt(d)
    assert bound_step == pytest.approx(step * math.tanh(2 * eps) / math.tanh(eps), rel=1e-12)
    assert two.mean(0).abs().max() == 0 and two.sum(-1).abs().max() < 1e-15


def test_activation_lipschitz_constants_are_upper_bounds():
    x = torch.linspace(-8, 8, 200_001, dtype=torch.float64, requires_grad=True)
    for name, f in (
        ("gelu", lambda t: torch.nn.functional.gelu(t)),
        ("gelu_tanh", lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
        ("relu", torch.relu),
    ):
        (grad,) = torch.autograd.grad(f(x).sum(), x)
        assert grad.abs().max() <= PL.ACTIVATION_LIP[name] <= grad.abs().max() + 1e-3


def test_standard_inits_and_refusals():
    for init in PL.INITS:
        net = PL.standard_init(128, init)
        assert net.config.n_heads == 2 and PL.layer_steps(net, 8).item() > 0
    with pytest.raises(ValueError, match="init"):
        PL.standard_init(128, "xavier")
    with pytest.raises(ValueError, match="head_width"):
        PL.standard_init(100, "gpt2")
    post = SAN(SANConfig(n_layers=1, d_model=4, skip=True, layernorm="post"), seed=0)
    with pytest.raises(ValueError, match="layernorm='pre'"):
        PL.preln_bound(post, torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="n must be even"):
        PL.antipodal_tokens(3, 4, 1.0)
    with pytest.raises(ValueError, match="omega"):
        PL.construction(2, 4, -1.0, 1.0)
    with pytest.raises(ValueError, match="n"):
        PL.layer_steps(PL.construction(1, 4, 0.1, 1.0), 1)


# ---------------------------------------------------------------- 60 digits


def _mp(t):
    return mp.matrix([[mp.mpf(float(v)) for v in row] for row in t.tolist()])


def _mp_norm(M, gain, shift, eps):
    """LayerNorm of every row of ``M`` at mpmath's precision (biased variance, ``eps`` inside)."""
    out = mp.matrix(M.rows, M.cols)
    for i in range(M.rows):
        row = [M[i, j] for j in range(M.cols)]
        mu = mp.fsum(row) / M.cols
        sigma = mp.sqrt(mp.fsum((v - mu) ** 2 for v in row) / M.cols + eps)
        for j in range(M.cols):
            out[i, j] = (row[j] - mu) / sigma * gain[j] + shift[j]
    return out


def _mp_residual_l2(M):
    n = M.rows
    mean = [mp.fsum(M[i, j] for i in range(n)) / n for j in range(M.cols)]
    return max(mp.sqrt(mp.fsum((M[i, j] - mean[j]) ** 2 for j in range(M.cols))) for i in range(n))


def _spectral(M):
    return max(mp.svd_r(M, compute_uv=False))


def _mp_forward_and_bound(net, X):
    """An independent pre-LN forward pass (attention, then a ReLU MLP) and the bound of section 8
    from the weights, both at 60 digits."""
    cfg = net.config
    eps, d, dh = mp.mpf(cfg.ln_eps), cfg.d_model, cfg.d_qk
    Xl = _mp(X)
    n = Xl.rows
    c = mp.mpf(n - 1) / n
    hidden, steps = [Xl], []
    for b in net.layers:
        w = {k: v.detach() for k, v in b.weights().items()}
        g1, s1 = (
            [mp.mpf(float(v)) for v in w["ln1_gain"]],
            [mp.mpf(float(v)) for v in w["ln1_shift"]],
        )
        Y = _mp_norm(Xl, g1, s1, eps)
        beta = 2 * c * max(abs(v) for v in g1) * mp.sqrt(d)
        out, step = mp.matrix(n, d), mp.mpf(0)
        for h in range(cfg.n_heads):
            WQ, WK, WV, WO = (_mp(w[k][h]) for k in ("W_Q", "W_K", "W_V", "W_O"))
            S = (Y * WQ) * (Y * WK).T / mp.sqrt(dh)
            P = mp.matrix(n, n)
            for i in range(n):
                m = max(S[i, j] for j in range(n))
                e = [mp.exp(S[i, j] - m) for j in range(n)]
                z = mp.fsum(e)
                for j in range(n):
                    P[i, j] = e[j] / z
            out += P * Y * WV * WO
            a, om = _spectral(WQ * WK.T), _spectral(WV * WO)
            step += om * mp.tanh(2 * a * beta**2 / mp.sqrt(dh))
        Xl = Xl + out
        step = 2 * c * max(abs(v) for v in g1) * mp.sqrt(d) * step
        if cfg.mlp:
            g2, s2 = (
                [mp.mpf(float(v)) for v in w["ln2_gain"]],
                [mp.mpf(float(v)) for v in w["ln2_shift"]],
            )
            W1, W2 = _mp(w["W_1"]), _mp(w["W_2"])
            Hd = _mp_norm(Xl, g2, s2, eps) * W1
            Hd = Hd.apply(lambda v: max(v, 0))
            Xl = Xl + Hd * W2
            step += 2 * c * max(abs(v) for v in g2) * mp.sqrt(d) * _spectral(W1) * _spectral(W2)
        hidden.append(Xl)
        steps.append(step)
    true = [_mp_residual_l2(h) for h in hidden]
    bound = [true[0]]
    for s in steps:
        bound.append(bound[-1] - s)
    return true, [max(v, 0) for v in bound]


def test_a_sample_recomputed_at_60_digits():
    """30 small pre-LN networks (with and without an MLP): the forward pass and the bound from the
    weights at 60 digits; the bound is below the residual, and the library's float64 forward pass
    and bound agree with the 60-digit numbers."""
    gen = torch.Generator().manual_seed(7)
    positive = 0
    for i in range(30):
        H = 1 + i % 2
        d = 2 * H
        cfg = SANConfig(
            n_layers=1 + i % 3, n_heads=H, d_model=d, skip=True, layernorm="pre",
            mlp=2 * d * (i % 2), activation="relu",
            init_scale=10 ** (2 * float(torch.rand(1, generator=gen)) - 1.5),
        )  # fmt: skip
        net = SAN(cfg, seed=100 + i)
        with torch.no_grad():
            for b in net.layers:  # gains and shifts away from 1 and 0
                b.ln1_gain.add_(0.3 * torch.randn(d, generator=gen, dtype=torch.float64))
                b.ln1_shift.add_(0.3 * torch.randn(d, generator=gen, dtype=torch.float64))
        n = 2 + i % 3
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        X = X * 10 ** (2 * float(torch.rand(1, generator=gen)))
        with mp.workdps(60):
            true, bound = _mp_forward_and_bound(net, X)
            assert all(b <= t for b, t in zip(bound, true))
            positive += sum(1 for b in bound[1:] if b > 0)
        lib_bound = PL.preln_bound(net, X)
        assert lib_bound.tolist() == pytest.approx([float(b) for b in bound], rel=1e-10, abs=1e-12)
        with torch.no_grad():
            measured = [PL.residual_l2(h).item() for h in net(X).hidden_states]
        assert measured == pytest.approx([float(t) for t in true], rel=1e-9)
    assert positive >= 15  # the comparison is made where the bound says something
