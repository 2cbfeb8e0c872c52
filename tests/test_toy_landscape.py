"""rc.toy.landscape: filter-normalised loss slices (Li et al. 2018) of a trained toy network."""

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse.toy import dynamics as D
from rankcollapse.toy import landscape as LS

TINY = rc.toy.ToyTask(
    "sorting",
    n_layers=2,
    n_heads=2,
    d_model=8,
    seq_len=5,
    n_train=24,
    n_eval=10,
    epochs=3,
    batch=8,
    lr=3e-3,
    vocab=6,
)


@pytest.fixture
def study(cache):
    return D.dynamics_study(TINY, seed=1, checkpoints=2, n_probe=4)


def _cross_entropy(model, X, y):
    """The token cross-entropy written out: -mean log softmax at the label."""
    with torch.no_grad():
        logp = model(X).double().log_softmax(-1)
        return float(-logp.gather(-1, y.unsqueeze(-1)).mean())


def test_every_filter_moves_by_its_own_norm(study):
    model = study.runs[True].model_at(-1)
    delta = LS.filter_normalised_direction(model, torch.Generator().manual_seed(0))
    for name, p in model.named_parameters():
        d = delta[name]
        assert d.shape == p.shape
        if p.ndim < 2 or not p.requires_grad:
            assert not d.any(), name
            continue
        axis = -2 if name.startswith("san.") else -1
        assert torch.allclose(d.norm(dim=axis), p.detach().norm(dim=axis), rtol=1e-10), name
        assert not torch.allclose(d, p.detach())  # a random direction, not the weights themselves
    again = LS.filter_normalised_direction(model, torch.Generator().manual_seed(0))
    assert all(torch.equal(delta[n], again[n]) for n in delta)


def test_the_slice_at_zero_is_the_trained_loss_and_leaves_the_model(study):
    run = study.runs[False]
    model = run.model_at(-1)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    X, y = run.data.X_train, run.data.y_train
    alphas = np.linspace(-1, 1, 5)
    s = LS.loss_slice(model, X, y, alphas=alphas, directions=2, seed=4)
    assert s.losses.shape == (2, 5) and s.accuracy.shape == (2, 5)
    want = _cross_entropy(model, X, y)
    assert s.loss0 == pytest.approx(want, rel=1e-12)
    assert np.allclose(s.losses[:, 2], want, rtol=1e-12)
    assert np.allclose(s.accuracy[:, 2], rc.toy.token_accuracy(model(X), y))
    for n, p in model.named_parameters():
        assert torch.equal(p.detach(), before[n])
    # a point of the slice is the loss of the weights moved by hand along the same direction
    delta = LS.filter_normalised_direction(model, torch.Generator().manual_seed(4))
    moved = run.model_at(-1)
    with torch.no_grad():
        for n, p in moved.named_parameters():
            p.add_(0.5 * delta[n])
    assert s.losses[0, 3] == pytest.approx(_cross_entropy(moved, X, y), rel=1e-10)
    assert s.rise(0.5) == pytest.approx(s.losses[:, [1, 3]].mean() - want)


def test_local_minima_counts_basins():
    flat = LS.LossSlice(
        np.linspace(-1, 1, 5),
        np.array([[2.0, 1.0, 0.0, 1.0, 2.0], [1.0, 0.0, 1.0, 0.0, 1.0]]),
        np.zeros((2, 5)),
        0.0,
    )
    assert flat.local_minima().tolist() == [1, 2]


def test_landscape_study(study):
    ls = LS.landscape_study(study, alphas=np.linspace(-1, 1, 5), directions=2, n_loss=8, radius=0.5)
    assert set(ls.slices) == {True, False} and ls.n_loss == 8 and not hasattr(ls, "glue")
    for skip in (True, False):
        model = study.runs[skip].model_at(-1, torch.float32)
        X, y = study.runs[skip].data.X_train[:8], study.runs[skip].data.y_train[:8]
        s, a = ls.slices[skip], ls.at_radius(skip)
        assert s.losses.shape == (2, 5)
        assert a["loss0"] == s.loss0 == pytest.approx(_cross_entropy(model, X, y), rel=1e-5)
        # alphas -1, -0.5, 0, 0.5, 1: radius 0.5 is columns 1 and 3
        assert a["rise"] == pytest.approx(s.losses[:, [1, 3]].mean() - s.loss0)
        assert a["accuracy"] == pytest.approx(s.accuracy[:, [1, 3]].mean())
        assert a["minima"] == s.local_minima().max()


def test_bad_input(study):
    model = study.runs[True].model_at(-1)
    X, y = study.runs[True].data.X_train, study.runs[True].data.y_train
    with pytest.raises(ValueError, match="alphas"):
        LS.loss_slice(model, X, y, alphas=[0.5, 1.0, 2.0])
    with pytest.raises(ValueError, match="alphas"):
        LS.loss_slice(model, X, y, alphas=[0.0, np.nan, 1.0])
    with pytest.raises(TypeError, match="model"):
        LS.loss_slice(None, X, y, alphas=[-1, 0, 1])
    with pytest.raises(TypeError, match="generator"):
        LS.filter_normalised_direction(model, 0)
    with pytest.raises(TypeError, match="study"):
        LS.landscape_study(None, alphas=[-1, 0, 1])
    with pytest.raises(ValueError, match="radius"):
        LS.landscape_study(study, alphas=[-1, 0, 1], radius=0.0)
    with pytest.raises(ValueError, match="n_loss"):
        LS.landscape_study(study, alphas=[-1, 0, 1], n_loss=10**6)
