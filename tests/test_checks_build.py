"""The build-it-yourself exercises (issue 30): a student's own correct answer, written as the
chapters' solutions write it, passes; the references agree with the library the chapters then use.
That each named mistake gets its hint is tested for every exercise in test_checks.py."""

import math

import torch

import rankbook as book
import rankcollapse as rc


def test_a_hand_written_attention_layer_passes():
    def attention_layer(X, W_Q, W_K, W_V, W_O):
        out = torch.zeros_like(X)
        for h in range(W_Q.shape[0]):
            logits = (X @ W_Q[h]) @ (X @ W_K[h]).T / math.sqrt(W_Q.shape[-1])
            out = out + torch.softmax(logits, dim=-1) @ X @ W_V[h] @ W_O[h]
        return out

    assert book.checks.check("paths.attention_layer", attention_layer, quiet=True).passed


def test_attention_layer_mistakes_each_get_their_own_hint():
    ex = book.checks.EXERCISES["paths.attention_layer"]
    hints = [book.checks.check(ex.id, wrong, quiet=True).message for wrong, _ in ex.mistakes]
    for (_, hint), message in zip(ex.mistakes, hints):
        assert hint in message and sum(h in message for _, h in ex.mistakes) == 1


def _frozen_weights(model, X):
    out = model(X)
    Ps = torch.stack(out.attentions).detach()
    Ws = torch.stack(
        [
            torch.stack([b.W_V[h] @ b.W_O[h] for h in range(model.config.n_heads)])
            for b in model.layers
        ]
    ).detach()
    return Ps, Ws


def test_by_length_reference_is_the_librarys_dynamic_programme():
    ref = book.checks.EXERCISES["paths.by_length"].reference
    for L, H in ((1, 1), (3, 2), (4, 3)):
        model = rc.san.SAN(rc.san.SANConfig(n_layers=L, n_heads=H, d_model=6, skip=True), seed=L)
        X = torch.randn(5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(H))
        Ps, Ws = _frozen_weights(model, X)
        assert torch.allclose(ref(X, Ps, Ws), rc.paths.decompose_by_length(model, X), atol=1e-12)


def test_residual_reference_is_the_librarys():
    ref = book.checks.EXERCISES["collapse.residual"].reference
    for (X,) in book.checks.EXERCISES["collapse.residual"].cases():
        got = ref(X)
        assert torch.allclose(
            got["res"].mean(dim=0), torch.zeros(X.shape[1], dtype=X.dtype), atol=1e-12
        )
        R = X - X.mean(dim=0)
        by_hand = math.sqrt(R.abs().sum(0).max() * R.abs().sum(1).max())
        assert math.isclose(float(got["norm"]), by_hand, rel_tol=1e-12)


def test_two_layers_reference_is_the_librarys_enumeration():
    ref = book.checks.EXERCISES["skip.two_layers"].reference
    for skip in (True, False):
        model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, skip=skip), seed=3)
        X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
        (P1, P2), (W1, W2) = _frozen_weights(model, X)
        want = rc.paths.enumerate_paths(model, X)
        got = ref(X, P1, P2, W1, W2, skip)
        assert set(got) == set(want) and all(
            torch.allclose(got[k], want[k], atol=1e-12) for k in want
        )


def test_circuit_groups_add_up_and_name_the_lengths():
    T = torch.randn(5, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    g = rc.paths.circuit_groups(T)
    assert list(g) == list(rc.paths.CIRCUITS)
    assert torch.equal(g["direct"], T[0]) and torch.equal(g["virtual"], T[2])
    assert torch.allclose(sum(g.values()), T.sum(0))
    short = rc.paths.circuit_groups(T[:2])  # depth 1: no virtual heads, no rest
    assert torch.equal(short["virtual"], torch.zeros(3, 4, dtype=torch.float64))
    assert torch.equal(short["rest"], torch.zeros(3, 4, dtype=torch.float64))


def test_circuit_groups_of_a_network_are_its_paths_of_length_0_1_2_and_more():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=4, n_heads=2, d_model=4, skip=True), seed=0)
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    g = rc.paths.circuit_groups(rc.paths.decompose_by_length(model, X))
    terms = rc.paths.enumerate_paths(model, X)
    by = {
        k: sum(t for p, t in terms.items() if min(rc.paths.path_length(p), 3) == i)
        for i, k in enumerate(rc.paths.CIRCUITS)
    }
    assert all(torch.allclose(g[k], by[k], atol=1e-12) for k in g)


def test_circuit_groups_bad_input():
    import pytest

    with pytest.raises(ValueError, match="T must be"):
        rc.paths.circuit_groups(torch.zeros(3, 4))
