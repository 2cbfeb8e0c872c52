"""rankcollapse.later.particles: tokens on the sphere under the attention flow, clusters against
depth."""

import math

import numpy as np
import pytest
import torch

import rankbook as book
from rankcollapse.later import particles as pt


def test_tokens_stay_on_the_sphere():
    X0 = pt.sphere_tokens(12, 3, seed=0)
    for beta in (0.0, 1.0, 9.0):
        traj = pt.attention_flow(X0, beta, dt=0.05, steps=200, every=10)
        assert traj.shape == (21, 12, 3)
        assert torch.allclose(
            traj.norm(dim=-1), torch.ones(21, 12, dtype=torch.float64), atol=1e-14, rtol=0
        )
    assert torch.equal(traj[0], X0)


def test_the_velocity_is_tangent_and_matches_the_formula():
    X = pt.sphere_tokens(6, 4, seed=1)
    beta = 2.0
    V = pt.attention_velocity(X, beta)
    assert torch.allclose((V * X).sum(dim=-1), torch.zeros(6, dtype=torch.float64), atol=1e-14)
    i = 3
    w = torch.exp(beta * X @ X[i])
    y = (w / w.sum()) @ X
    assert torch.allclose(V[i], y - (y @ X[i]) * X[i], atol=1e-14)


def test_a_single_cluster_is_a_fixed_point():
    x = pt.sphere_tokens(1, 3, seed=2)
    X0 = x.expand(8, 3).clone()
    assert pt.attention_velocity(X0, 4.0).abs().max() < 1e-15  # zero up to rounding
    traj = pt.attention_flow(X0, 4.0, dt=0.1, steps=50)
    assert torch.allclose(traj[-1], X0, atol=1e-15)
    assert pt.count_clusters(traj[-1]) == 1


def test_count_clusters():
    X = pt.sphere_tokens(10, 5, seed=3)
    assert pt.count_clusters(X) == 10  # random points are far apart
    e = torch.eye(3, dtype=torch.float64)
    groups = torch.stack([e[0], e[0], -e[0], e[1], e[1]])
    assert pt.count_clusters(groups) == 3
    assert pt.count_clusters(torch.stack([e[0], e[1]]), tol=1.0) == 1  # orthogonal: 1 - <x, y> = 1


def test_cluster_count_does_not_rise_in_the_long_run():
    r = pt.particle_study(n=16, d=3, betas=[1.0, 9.0], T=30.0, dt=0.05, every=10, seed=0)
    assert r.counts[:, 0].tolist() == [16, 16]
    assert r.non_increasing_tail()
    assert r.counts[0, -1] == 1 and math.isfinite(r.merge_time(0))
    assert (
        r.counts[1, len(r.times) // 4] >= r.counts[0, len(r.times) // 4]
    )  # larger beta: slower merging
    assert np.all(r.counts[:, -1] <= r.counts[:, len(r.times) // 2])


def test_the_study_is_deterministic():
    kw = dict(n=10, d=3, betas=[1.0, 4.0, 16.0], T=20.0, dt=0.04, every=25, seed=1)
    a, b = pt.particle_study(**kw), pt.particle_study(**kw)
    assert np.array_equal(a.counts, b.counts)
    assert a.times[-1] == pytest.approx(20.0) and sorted(a.paths) == [1.0, 4.0, 16.0]
    assert a.counts.shape == (3, len(a.times)) and a.counts[:, 0].tolist() == [10, 10, 10]
    a.counts[0, :] = 5  # beta = 1 no longer reaches one cluster within the run
    assert math.isinf(a.merge_time(0))


def test_figures():
    import matplotlib.pyplot as plt

    r = pt.particle_study(n=8, d=3, betas=[1.0, 4.0, 9.0], T=4.0, dt=0.05, every=8, seed=0)
    later = book.plotting.later
    for fig, panels in ((later.particle_figure(r), 3), (later.cluster_count_figure(r), 1)):
        assert len(fig.axes) == panels
        plt.close(fig)


def test_bad_input():
    with pytest.raises(ValueError, match="unit vectors"):
        pt.attention_flow(torch.ones(3, 2), 1.0, dt=0.1, steps=1)
    with pytest.raises(ValueError, match="dt"):
        pt.attention_flow(pt.sphere_tokens(3, 2, seed=0), 30.0, dt=0.1, steps=1)
    with pytest.raises(ValueError, match="d"):
        pt.sphere_tokens(3, 1, seed=0)
    with pytest.raises(ValueError, match="show"):
        pt.particle_study(n=3, d=3, betas=[1.0], T=1.0, dt=0.1, every=1, seed=0, show=[2.0])
    with pytest.raises(ValueError, match="shape"):
        pt.count_clusters(pt.sphere_tokens(3, 2, seed=0).expand(2, 3, 2))
