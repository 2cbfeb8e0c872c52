"""rc.toy: task generators, deterministic training with a checkpoint cache, and exact path
evaluation."""

import numpy as np
import pytest
import torch

import rankbook as book
import rankcollapse as rc

TINY = rc.toy.ToyTask(
    "sorting",
    n_layers=3,
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
def trained(cache):
    return rc.toy.train(TINY, seed=3, progress=False)


# ------------------------------------------------------------------ data


def test_sorting_labels_are_the_sorted_sequence():
    data = rc.toy.sorting(5, 3, seq_len=7, vocab=4, seed=1)
    assert data.X_train.shape == (5, 7) and data.X_eval.shape == (3, 7)
    assert torch.equal(data.y_train, torch.sort(data.X_train, -1).values)
    assert data.X_train.max() < 4 and data.n_labels == 4
    assert torch.equal(rc.toy.sorting(5, 3, seq_len=7, vocab=4, seed=1).X_eval, data.X_eval)
    assert not torch.equal(rc.toy.sorting(5, 3, seq_len=7, vocab=4, seed=2).X_train, data.X_train)


def test_hull_labels_mark_the_vertices():
    pts = torch.tensor([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0], [1.0, 1.0], [1.0, 0.0]])
    assert rc.toy.hull_labels(pts).tolist() == [
        1,
        1,
        1,
        1,
        0,
        0,
    ]  # centre and an edge midpoint are not vertices
    data = rc.toy.convex_hull(20, 5, seq_len=10, seed=0)
    assert data.X_train.shape == (20, 10, 2)
    assert (data.y_train.sum(-1) >= 3).all()  # a hull has at least three vertices
    from scipy.spatial import ConvexHull  # an independent hull (Qhull)

    for x, y in zip(data.X_train, data.y_train):
        assert set(torch.nonzero(y).flatten().tolist()) == set(
            ConvexHull(x.numpy()).vertices.tolist()
        )


def test_memorization_uses_the_books_prose():
    words = rc.toy.words()
    assert len(words) > 4000 and all(w == w.lower() and w.isalnum() for w in words[:200])
    data = rc.toy.memorization(4, seq_len=16, seed=0)
    assert data.X_train.shape == (4, 16) and torch.equal(data.X_eval, data.X_train)
    assert set(data.y_train.unique().tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="words"):
        rc.toy.memorization(10_000, seq_len=128, seed=0)


def test_circle_pairs_step_along_the_circle():
    X, Y = rc.toy.circle_pairs(1000, 0.3)
    assert X.shape == (499, 2, 2)
    assert torch.allclose(X.norm(dim=-1), torch.full((499, 2), 0.3, dtype=torch.float64))
    assert torch.equal(X[1:], Y[:-1])
    X12, _ = rc.toy.circle_pairs(
        12, 0.3
    )  # the memory cap is checked first: the points are unchanged
    assert X12[1].tolist() == [
        [0.2598076211353316, 0.14999999999999997],
        [-0.3, 3.6739403974420595e-17],
    ]
    with pytest.raises(ValueError, match="n_points"):
        rc.toy.circle_pairs(10**11)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="task"):
        rc.toy.ToyTask("parity", 2, 2, 8, 4, 4, 4, 1, 2, 1e-3)
    with pytest.raises(ValueError, match="variant"):
        TINY.replace(variant="skip")
    with pytest.raises(TypeError, match="task"):
        rc.toy.train("sorting")
    with pytest.raises(TypeError, match="retrain"):
        rc.toy.train(TINY, retrain="yes")
    with pytest.raises(ValueError, match="token ids"):
        rc.toy.ToyModel(rc.toy.toy_config(TINY, rc.toy.task_data(TINY, 0)), seed=0)(
            torch.tensor([[9]])
        )


def test_fisher_exact_test_of_two_counts():
    """Fisher's exact test, two-sided, against values worked by hand: 1 of 1 against 0 of 1 has
    the two splits of one hit equally likely (p = 1); 3 of 3 against 0 of 3 is one of the two
    extreme splits of C(6, 3) = 20 (p = 2/20); 9 of 20 against 6 of 20, the circle toy's counts
    over 20 seeds in issue 43 (p = 0.51); and bad counts refused."""
    assert rc.toy.fisher_exact(1, 1, 0, 1) == 1.0
    assert abs(rc.toy.fisher_exact(3, 3, 0, 3) - 2 / 20) < 1e-12
    assert abs(rc.toy.fisher_exact(9, 20, 6, 20) - 0.5145) < 1e-4
    assert rc.toy.fisher_exact(4, 10, 4, 10) == 1.0
    with pytest.raises(ValueError, match="hits_a"):
        rc.toy.fisher_exact(4, 3, 0, 3)


# ------------------------------------------------------------------ training and the cache


def test_cache_folder_follows_the_environment(cache, monkeypatch):
    assert rc.toy.cache_dir() == cache / "toy"
    monkeypatch.delenv("RANKCOLLAPSE_CACHE")
    assert rc.toy.cache_dir().parts[-3:] == (".cache", "rankcollapse", "toy")
    a = rc.toy.checkpoint_path(TINY, 0)
    assert a != rc.toy.checkpoint_path(TINY, 1) != rc.toy.checkpoint_path(TINY.replace(lr=1e-3), 0)


def test_training_is_deterministic(cache, tmp_path, monkeypatch):
    first = rc.toy.train(TINY, seed=3, progress=False)
    monkeypatch.setenv("RANKCOLLAPSE_CACHE", str(tmp_path / "other"))
    second = rc.toy.train(TINY, seed=3, progress=False)
    assert not first.from_cache and not second.from_cache and first.path != second.path
    for (name, a), (_, b) in zip(
        first.model.state_dict().items(), second.model.state_dict().items()
    ):
        assert torch.equal(a, b), name
    assert first.log == second.log
    assert first.log["loss"][-1] < first.log["loss"][0]  # it learned something
    init = rc.toy.ToyModel(first.model.config, seed=3)
    assert not torch.equal(init.classifier.weight, first.model.classifier.weight)


def test_checkpoint_is_reused_and_gives_the_same_numbers(trained):
    again = rc.toy.train(TINY, seed=3, progress=False)
    assert again.from_cache and again.path == trained.path
    assert again.log == trained.log and again.steps == trained.steps == TINY.steps == 3 * 3
    for a, b in zip(trained.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    ev1 = rc.toy.evaluate_paths(trained.exact, trained.data.X_eval, trained.data.y_eval, draws=5)
    ev2 = rc.toy.evaluate_paths(again.exact, again.data.X_eval, again.data.y_eval, draws=5)
    assert np.array_equal(ev1.path_accuracy, ev2.path_accuracy)
    assert all(np.array_equal(ev1.sampled[k], ev2.sampled[k]) for k in ev1.sampled)
    retrained = rc.toy.train(TINY, seed=3, retrain=True, progress=False)
    assert not retrained.from_cache and retrained.log == trained.log


def test_layernorm_shifts_stay_zero(trained):
    for block in trained.model.san.layers:
        assert not block.ln1_shift.requires_grad and not block.ln1_shift.any()


# ------------------------------------------------------------------ exact path evaluation


def test_per_length_sums_add_up_to_the_output(trained):
    model, X = trained.exact, trained.data.X_eval
    E = model.embed(X)
    T = rc.paths.decompose_by_length(model.san, E)
    Y = model.san(E).last_hidden_state
    assert T.dtype == torch.float64
    assert (T.sum(0) - Y).abs().max() < 1e-10
    assert torch.allclose(model.readout(T.sum(0)), model(X), atol=1e-10, rtol=0)
    # and the enumerated terms add up to each length's sum
    terms = rc.toy.all_path_terms(model.san, E)
    lengths = torch.tensor([rc.paths.path_length(p) for p in rc.paths.all_paths(3, 2)])
    for l in range(4):
        assert (terms[lengths == l].sum(0) - T[l]).abs().max() < 1e-10


def test_path_terms_match_rc_paths_enumeration(trained):
    model = trained.exact
    E = model.embed(trained.data.X_eval[:2])
    terms = rc.toy.all_path_terms(model.san, E)
    enumerated = rc.paths.enumerate_paths(model.san, E)
    for i, path in enumerate(rc.paths.all_paths(3, 2)):
        assert rc.toy.path_index(path, 2) == i
        assert torch.allclose(terms[i], enumerated[path], atol=1e-12, rtol=0)


def _single_head_network(model, X, path):
    """One path as its own single-head network, written from the weights and the full forward
    pass's attention and LayerNorm scales only (independent of rc.paths and rc.toy.evaluate)."""
    E = model.embed(X)
    out = model.san(E)
    Y = E
    for block, P, sigma, c in zip(model.san.layers, out.attentions, out.ln_scales, path):
        Z = Y if c is None else P[:, c] @ Y @ block.W_V[c] @ block.W_O[c]
        Y = (Z - Z.mean(-1, keepdim=True)) / sigma[..., None] * block.ln1_gain
    return model.readout(Y)


def test_per_path_accuracies_agree_with_single_head_networks(trained):
    model, X, y = trained.exact, trained.data.X_eval, trained.data.y_eval
    ev = rc.toy.evaluate_paths(model, X, y, draws=3, budget_mb=0.01)  # one sequence per chunk
    assert len(ev.paths) == 27 and ev.tokens == y.numel()
    with torch.no_grad():
        for path, acc in zip(ev.paths, ev.path_accuracy):
            assert rc.toy.token_accuracy(_single_head_network(model, X, path), y) == acc, path
    assert ev.cumulative_accuracy[-1] == ev.full_accuracy == trained.log["eval_accuracy"]
    # the all-skip path is the embedding passed through every layer's LayerNorm
    assert ev.path_accuracy[0] == ev.length_accuracy[0]
    stats = ev.per_length()
    assert stats["count"].tolist() == [1, 6, 12, 8]
    assert np.all(stats["worst"] <= stats["mean"]) and np.all(stats["mean"] <= stats["best"])


def test_sampled_paths_have_the_asked_length_and_cover_them_all():
    gen = torch.Generator().manual_seed(0)
    paths = rc.paths.all_paths(4, 3)
    for length in range(5):
        idx = rc.toy.sample_paths(4, 3, length, 5, 400, gen)
        assert idx.shape == (400, 5)
        assert {rc.paths.path_length(paths[i]) for i in idx.flatten().tolist()} == {length}
        assert len(set(idx.flatten().tolist())) == rc.paths.path_count(4, 3, length)
    # the memory cap and the argument checks come before the draw, which is unchanged
    assert rc.toy.sample_paths(4, 3, 2, 5, 3, torch.Generator().manual_seed(0)).tolist() == [
        [208, 130, 144, 11, 76],
        [60, 200, 65, 208, 176],
        [208, 56, 35, 44, 15],
    ]


def test_sampled_estimate_of_all_paths_of_a_length(trained):
    """Twenty paths of length 0 are twenty copies of the one length-0 path: exact, no spread."""
    model, X, y = trained.exact, trained.data.X_eval, trained.data.y_eval
    ev = rc.toy.evaluate_paths(model, X, y, ks=(1, 20), draws=4, seed=1)
    assert np.all(ev.sampled[20][0] == ev.length_accuracy[0])
    assert ev.sampled[20].shape == (4, 4)
    # one path drawn is one of the single paths of that length
    for l in range(4):
        assert set(ev.sampled[1][l]) <= set(ev.path_accuracy[ev.lengths == l])


@pytest.mark.parametrize("budget_mb", [0.01, 0.05, 160])  # chunks of 1, a few, all sequences
def test_single_paths_and_draws_use_only_the_first_n_sampled_sequences(trained, budget_mb):
    """(a) and (c) on ``n_sampled`` sequences are those of the first ``n_sampled`` alone, whatever
    the chunk size (a chunk running past ``n_sampled`` once counted extra tokens: accuracies >
    1)."""
    model, X, y = trained.exact, trained.data.X_eval, trained.data.y_eval
    ev = rc.toy.evaluate_paths(model, X, y, draws=3, budget_mb=budget_mb, n_sampled=3)
    alone = rc.toy.evaluate_paths(model, X[:3], y[:3], draws=3)
    assert ev.tokens == y[:3].numel()
    assert np.array_equal(ev.path_accuracy, alone.path_accuracy)
    for k in ev.sampled:
        assert np.array_equal(ev.sampled[k], alone.sampled[k])
    assert ev.path_accuracy.max() <= 1 and max(s.max() for s in ev.sampled.values()) <= 1


def test_evaluation_needs_float64(trained):
    with pytest.raises(ValueError, match="float64"):
        rc.toy.evaluate_paths(trained.model, trained.data.X_eval, trained.data.y_eval)


# ------------------------------------------------------------------ circle


def test_circle_rollout(cache):
    task = rc.toy.ToyTask("circle", 1, 2, 8, 2, 40, 1, epochs=2, batch=10, lr=1e-3, variant="skip")
    tr = rc.toy.train(task, seed=0, progress=False)
    assert tr.model.san.config.skip and tr.model.san.config.layernorm == "post"
    X0 = tr.data.X_train[0]
    traj = rc.toy.rollout(tr.exact, X0, 5)
    assert traj.shape == (6, 2, 2) and torch.equal(traj[0], X0)
    assert torch.allclose(traj[1], tr.exact(X0))


# -------------------------------------------------------------- matched tokens, residuals, ceilings


def test_matched_accuracies_are_those_of_the_first_sequences_alone(trained):
    """(b) and the full model on the tokens of (a) and (c): the same as evaluating the first
    n_sampled sequences on their own."""
    model, X, y = trained.exact, trained.data.X_eval, trained.data.y_eval
    ev = rc.toy.evaluate_paths(model, X, y, draws=3, n_sampled=4, budget_mb=0.02)
    alone = rc.toy.evaluate_paths(model, X[:4], y[:4], draws=3)
    assert (
        ev.tokens == alone.tokens == alone.tokens_all == y[:4].numel()
        and ev.tokens_all == y.numel()
    )
    assert np.array_equal(ev.matched["length"], alone.length_accuracy)
    assert np.array_equal(ev.matched["cumulative"], alone.cumulative_accuracy)
    assert ev.matched["full"] == alone.full_accuracy == rc.toy.token_accuracy(model(X[:4]), y[:4])
    assert np.allclose(ev.path_residual, alone.path_residual, rtol=1e-12)  # summed in other chunks
    assert np.array_equal(ev.counts, [1, 6, 12, 8])


def test_path_residual_is_each_terms_share_of_the_outputs_residual(trained):
    model, X, y = trained.exact, trained.data.X_eval[:3], trained.data.y_eval[:3]
    ev = rc.toy.evaluate_paths(model, X, y, ks=(), draws=1)
    with torch.no_grad():
        E = model.embed(X)
        terms = rc.toy.all_path_terms(model.san, E)
        Y = model.san(E).last_hidden_state
    share = rc.residual.matrix_norm(rc.residual.res(terms)) / rc.residual.matrix_norm(
        rc.residual.res(Y)
    )
    assert np.allclose(ev.path_residual, share.mean(-1).numpy(), rtol=1e-10)
    # the length-0 path is the embedding through every LayerNorm: its share is the length-0
    # profile's
    prof = rc.paths.length_profile(model.san, E)["residual_share"]
    assert ev.path_residual[0] == pytest.approx(float(prof[0].mean()), rel=1e-10)
    assert ev.sampled == {}
    with pytest.raises(ValueError, match="values"):
        ev.per_length("lengths")


def test_memorization_ceiling():
    # two windows of four tokens: word 0 three times in the first (labels 1, 1, 0), word 1 once
    X = torch.tensor([[0, 0, 1, 0], [1, 1, 1, 1]])
    y = torch.tensor([[1, 1, 0, 0], [0, 1, 0, 0]])
    data = rc.toy.TaskData(X, y, X, y, 2, 2)
    assert rc.toy.memorization_ceiling(data) == (3 + 3) / 8
    with pytest.raises(TypeError, match="memorization"):
        rc.toy.memorization_ceiling(rc.toy.convex_hull(2, 2, seed=0))


def test_a_trained_memorization_network_stays_below_its_ceiling(cache):
    task = rc.toy.ToyTask(
        "memorization",
        n_layers=2,
        n_heads=2,
        d_model=16,
        seq_len=16,
        n_train=4,
        n_eval=4,
        epochs=30,
        batch=2,
        lr=3e-3,
    )
    tr = rc.toy.train(task, seed=0, progress=False)
    assert tr.log["train_accuracy"] <= rc.toy.memorization_ceiling(tr.data) < 1


def test_step_counts():
    assert [rc.toy.official_steps(t) for t in ("sorting", "convex_hull", "memorization")] == [
        2210,
        23380,
        3150,
    ]
    assert rc.toy.ToyTask("sorting", **rc.toy.OFFICIAL["sorting"]).steps == 2210
    full = book.presets.PRESETS["toy_tasks"]["full"]
    # the chapter's "official optimiser" run is the code's sorting run, settings and all
    assert {k: v for k, v in rc.toy.OFFICIAL["sorting"].items()} == full["official_sorting"]
    with pytest.raises(ValueError, match="task"):
        rc.toy.official_steps("parity")


def test_train_all_in_two_processes_gives_the_checkpoints_of_train(cache, tmp_path, monkeypatch):
    jobs = [(TINY, 3), (TINY.replace(lr=1e-3), 3), (TINY, 3)]  # a pair twice: trained once
    alone = [rc.toy.train(t, s, progress=False) for t, s in jobs[:2]]
    monkeypatch.setenv("RANKCOLLAPSE_CACHE", str(tmp_path / "other"))
    both = rc.toy.train_all(jobs, workers=2, progress=False)
    assert [tr.from_cache for tr in both] == [
        True,
        True,
        True,
    ]  # trained by the workers, then loaded
    assert both[0] is both[2]
    for a, b in zip(alone, both):
        assert a.log == b.log
        for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()):
            assert torch.equal(x, y)
    again = rc.toy.train_all(jobs[:1], workers=2, progress=False)  # all cached: loaded, no process
    assert again[0].from_cache
    with pytest.raises(TypeError, match="jobs"):
        rc.toy.train_all([TINY])
    with pytest.raises(ValueError, match="workers"):
        rc.toy.train_all(jobs, workers=0)


def test_the_checkpoint_key_follows_the_code_not_its_comments(tmp_path):
    """rc.toy.code_version: a docstring, a comment or the layout keeps the key; a change to what the
    code does changes it (issue 31: no version bumped by hand)."""
    a, b, c, d = (tmp_path / f"{n}.py" for n in "abcd")
    a.write_text('"""Module."""\ndef f(x):\n    """Doc."""\n    return x + 1\n')
    b.write_text(
        '"""Other words."""\n# a comment\ndef f(x):\n    """Other doc."""\n\n    return (x\n'
        "            + 1)\n"
    )
    c.write_text('"""Module."""\ndef f(x):\n    """Doc."""\n    return x + 2\n')
    d.write_text("def f(x):\n    return x + 1\n")
    assert rc.toy.code_version(a) == rc.toy.code_version(b) == rc.toy.code_version(d)
    assert rc.toy.code_version(a) != rc.toy.code_version(c)
    assert rc.toy.code_version(a, c) != rc.toy.code_version(c, a)
    assert rc.toy.training_code_hash() == rc.toy.code_version(*rc.toy.TRAINING_FILES)
    assert len(rc.toy.training_code_hash()) == 12


def test_standardise_and_task_data_check_their_arguments_and_give_what_they_gave():
    Y = torch.randn(2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert rc.toy.standardise(Y)[0, 0].tolist() == [
        -1.35844148052244,
        0.2617835585804509,
        -0.31329068062589294,
        1.409948602567882,
    ]
    assert torch.equal(
        rc.toy.standardise(Y), rc.toy.model._standardise(Y)
    )  # the readout's, unchecked
    with pytest.raises(ValueError, match="meta"):
        rc.toy.standardise(torch.empty(3, 4, device="meta"))
    task = rc.toy.ToyTask(
        "sorting",
        n_layers=1,
        n_heads=1,
        d_model=4,
        seq_len=3,
        n_train=4,
        n_eval=2,
        epochs=2,
        batch=2,
        lr=1e-3,
        vocab=3,
    )
    assert rc.toy.task_data(task, 0).X_train.tolist() == [
        [2, 0, 2],
        [0, 1, 0],
        [1, 1, 1],
        [0, 2, 2],
    ]
    with pytest.raises(TypeError, match="task must be a ToyTask"):
        rc.toy.task_data("sorting", 0)
