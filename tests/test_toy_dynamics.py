"""rc.toy.dynamics: stable ranks and token residuals read from the weights of one training run."""

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse.toy import dynamics as D

TINY = rc.toy.ToyTask(
    "sorting",
    n_layers=3,
    n_heads=2,
    d_model=8,
    seq_len=5,
    n_train=24,
    n_eval=10,
    epochs=4,
    batch=8,
    lr=3e-3,
    vocab=6,
)


@pytest.fixture
def study(cache):
    return D.dynamics_study(TINY, seed=2, checkpoints=3, n_probe=6)


# ------------------------------------------------------------------ stable rank


def test_stable_rank_is_the_ratio_of_squared_norms():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(5, 7, 4, dtype=torch.float64, generator=g)
    s = np.linalg.svd(W.numpy(), compute_uv=False)  # an independent SVD
    want = (s**2).sum(-1) / s[:, 0] ** 2
    assert np.allclose(D.stable_rank(W).numpy(), want, rtol=1e-12)
    fro, spec = torch.linalg.matrix_norm(W), torch.linalg.matrix_norm(W, ord=2)
    assert torch.allclose(D.stable_rank(W), fro**2 / spec**2, rtol=1e-12)


def test_stable_rank_limits():
    assert float(D.stable_rank(torch.eye(6, dtype=torch.float64))) == pytest.approx(6.0)
    u, v = torch.arange(1.0, 5.0, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    assert float(D.stable_rank(torch.outer(u, v))) == pytest.approx(1.0)
    W = torch.randn(9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    sr = float(D.stable_rank(W))
    assert 1.0 <= sr <= 6.0
    assert float(D.stable_rank(-3.5 * W)) == pytest.approx(sr, rel=1e-12)  # scale-free
    spike = 30.0 * torch.outer(W[:, 0], W[0]) / (W[:, 0].norm() * W[0].norm())
    assert (
        float(D.stable_rank(W + spike)) < sr / 2
    )  # one large direction: low stable rank, full rank
    assert int(torch.linalg.matrix_rank(W + spike)) == 6


def test_stable_rank_bad_input():
    with pytest.raises(TypeError, match="W"):
        D.stable_rank(torch.ones(3))
    with pytest.raises(TypeError, match="W"):
        D.stable_rank([[1.0, 0.0]])
    with pytest.raises(ValueError, match="zero matrix"):
        D.stable_rank(torch.zeros(2, 3, 3))


# ------------------------------------------------------------------ training runs


def test_checkpoint_epochs():
    assert D._epochs(3, 4) == (0, 2, 4)
    assert D._epochs(2, 25) == (0, 25)
    assert D._epochs((0, 1, 4), 4) == (0, 1, 4)
    for bad in ((2, 1), (0, 5), (), (1, 1)):
        with pytest.raises(ValueError, match="checkpoints"):
            D._epochs(bad, 4)
    with pytest.raises(ValueError, match="checkpoints"):
        D._epochs(1, 4)


def test_the_run_with_skips_is_rc_toy_trains_run(cache):
    """The callback copies weights and changes nothing: the last kept weights are rc.toy.train's,
    bit for bit, and the first are the initial weights."""
    run = D.training_run(TINY, seed=2, skip=True, checkpoints=(0, 2, 4))
    trained = rc.toy.train(TINY, seed=2, progress=False)
    assert not trained.from_cache  # trained now, not loaded from a file the run wrote
    for name, t in trained.model.state_dict().items():
        assert torch.equal(run.states[-1][name], t), name
    init = rc.toy.ToyModel(rc.toy.toy_config(TINY, trained.data), seed=2)
    for name, t in init.state_dict().items():
        assert torch.equal(run.states[0][name], t), name
    assert run.loss == trained.log["loss"]
    assert not torch.equal(run.states[1]["san.layers.0.W_Q"], run.states[0]["san.layers.0.W_Q"])


def test_runs_are_cached_deterministic_and_named(cache):
    a = D.training_run(TINY, seed=2, skip=False, checkpoints=3)
    b = D.training_run(TINY, seed=2, skip=False, checkpoints=3)
    c = D.training_run(TINY, seed=2, skip=False, checkpoints=3, retrain=True)
    assert not a.from_cache and b.from_cache and not c.from_cache
    assert a.run_id == b.run_id == c.run_id and a.path.exists()
    for k in range(3):
        for name in a.states[k]:
            assert torch.equal(a.states[k][name], b.states[k][name]) and torch.equal(
                a.states[k][name], c.states[k][name]
            )
    other = D.training_run(TINY, seed=2, skip=True, checkpoints=3)
    assert other.run_id != a.run_id
    assert D.training_run(TINY, seed=3, skip=False, checkpoints=3).run_id != a.run_id
    assert a.model_at(0).config.skip is False and other.model_at(0).config.skip is True


def test_the_study_reads_both_quantities_from_each_checkpoint(study):
    """Same run: the stable ranks and the residual at checkpoint k are those of the weights kept at
    k, recomputed here independently (numpy SVD; residual from the hidden states by hand)."""
    for skip in (True, False):
        run = study.runs[skip]
        assert study.run_ids[skip] == run.run_id
        for k in range(len(run.epochs)):
            model = run.model_at(k)
            s = [
                np.linalg.svd(getattr(b, kind).detach().numpy(), compute_uv=False)
                for kind in D.WEIGHT_KINDS
                for b in [model.san.layers[0]]
            ]
            want = np.concatenate([(x**2).sum(-1) / x[:, 0] ** 2 for x in s])
            L, H = TINY.n_layers, TINY.n_heads
            got = study.stable_rank[skip][k].reshape(4, L, H)[:, 0].ravel()
            assert np.allclose(got, want, rtol=1e-10)
            with torch.no_grad():
                hidden = model.san(model.embed(run.data.X_eval[: study.n_probe])).hidden_states
            for layer, Xl in enumerate(hidden):
                R = Xl - Xl.mean(-2, keepdim=True)
                c = lambda A: torch.sqrt(A.abs().sum(-2).amax(-1) * A.abs().sum(-1).amax(-1))  # noqa: E731
                rel = (c(R) / c(Xl)).numpy()
                assert study.residual[skip][k, layer] == pytest.approx(
                    np.exp(np.log(rel).mean()), rel=1e-9
                )
        assert study.residual[skip][:, 0].min() > 0


def test_without_skips_the_tokens_collapse_and_with_skips_they_do_not(study):
    # pure attention with post-LN at initialisation: the residual falls through depth; with skips
    # the length-0 path keeps it within a factor of the input's
    no, yes = study.residual[False][0], study.residual[True][0]
    assert no[-1] < 1e-3 * no[0]
    assert yes[-1] > 0.1 * yes[0]


def test_change_and_numbers(study):
    for skip in (True, False):
        c = study.change(skip)
        sr, res = study.stable_rank[skip], study.residual[skip]
        assert c["stable_rank"] == pytest.approx(np.abs(sr[-1] / sr[0] - 1).max())
        assert c["residual_factor"] == pytest.approx(res[-1, -1] / res[0, -1])
        n = study.numbers(skip)
        assert all(isinstance(v, float) and np.isfinite(v) for v in n.values()), n
        assert n["acc0"] == study.accuracy[skip][0] and n["acc"] == study.accuracy[skip][-1]
        assert n["res0"] == res[0, -1] and n["res"] == res[-1, -1] and n["res_in"] == res[-1, 0]
        assert n["sr0"] == pytest.approx(sr[0].mean()) and n["sr"] == pytest.approx(sr[-1].mean())
        assert n["qk0"] == study.qk_norm[skip][0] and n["qk"] == study.qk_norm[skip][-1]
        assert n["constant"] == study.constant[skip][-1]
        assert {k: n[k] for k in c} == c
    assert study.stable_rank[True].shape[1] == 4 * TINY.n_layers * TINY.n_heads
    assert not hasattr(study, "glue")  # the library returns numbers; the chapter words them


def test_bad_input(cache):
    with pytest.raises(TypeError, match="task"):
        D.training_run("sorting")
    with pytest.raises(ValueError, match="circle"):
        D.training_run(rc.toy.ToyTask("circle", 1, 2, 8, 2, 20, 1, 1, 5, 1e-3, variant="skip"))
    with pytest.raises(TypeError, match="skip"):
        D.training_run(TINY, skip="no")
    with pytest.raises(ValueError, match="seed"):
        D.training_run(TINY, seed=-1)
    with pytest.raises(TypeError, match="model"):
        D.weight_matrices(None)
    with pytest.raises(ValueError, match="n_probe"):
        D.dynamics_study(TINY, seed=2, checkpoints=2, n_probe=11)
