"""rc.real.study: the real-models chapter's result objects, which hold numbers only, on pretrained
MiniLM (offline, a few tokens) and on curves built by hand where a value must be known exactly."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import rankcollapse as rc

pytest.importorskip("transformers")
S = rc.real.study


@pytest.fixture(scope="module")
def minilm():
    return rc.real.load("all-MiniLM-L6-v2", True)


def test_by_name_finds_the_model_or_names_the_missing_one(minilm):
    assert S.by_name([minilm], "all-MiniLM-L6-v2") is minilm
    with pytest.raises(KeyError, match="gpt2"):
        S.by_name([minilm], "gpt2")


def test_ablations_on_minilm(minilm):
    ab = S.ablations([minilm], 1, 12, batch_size=1, progress=False)
    assert set(ab.curves) == {(minilm.label, v, s) for v, s in rc.real.ABLATIONS}
    for curve in ab.curves.values():
        assert curve.shape == (1, 7) and np.all(curve >= 0)
    # one sequence: the typical curve is the curve itself
    full = ab.curves[(minilm.label, "full", "clean")][0]
    np.testing.assert_allclose(ab.typical(minilm, "full", "clean"), full, rtol=1e-12)
    assert ab.last(minilm, "full", "clean") == pytest.approx(full[-1], rel=1e-12)
    assert ab.drop(minilm, "full", "clean") == pytest.approx(full[0] / full[-1], rel=1e-12)
    # attention alone collapses within MiniLM's six layers; the full model never gets there
    assert ab.floor_layer(minilm, "san", "clean") <= 6
    assert ab.floor_layer(minilm, "full", "clean") is None
    assert ab.floor_layer(minilm, "full", "clean", default=7) == 7


def _fake(name, pretrained=False, n_layers=3):
    return SimpleNamespace(
        name=name,
        label=name + (" (pretrained)" if pretrained else ""),
        pretrained=pretrained,
        n_layers=n_layers,
    )


def test_the_numbers_read_the_curves_they_are_given():
    """Hand-made curves with known values: geometric means, floors, steps and slopes."""
    m = _fake("xlnet-base-cased", n_layers=5)
    decade = 10.0 ** -np.arange(6.0)  # a decade per layer
    cascade = np.array([1.0, 1e-1, 1e-4, 1e-16, 1e-16, 1e-16])  # accelerating, then rounding
    curves = {
        (m.label, "san", "clean"): np.stack([decade, decade * 100]),  # geometric mean: x10
        (m.label, "san", "paper"): np.stack([cascade, cascade]),
    }
    ab = S.Ablations([m], curves)
    np.testing.assert_allclose(ab.typical(m, "san", "clean"), decade * 10, rtol=1e-12)
    assert ab.decades_per_layer(m, "san", "clean") == pytest.approx(1.0)
    np.testing.assert_allclose(ab.log_steps(m, "san", "clean"), np.ones(5), atol=1e-9)
    # the steps stop at the last layer above 1e-13: the fall into rounding error is left out
    np.testing.assert_allclose(ab.log_steps(m, "san", "paper"), [1.0, 3.0], atol=1e-9)
    assert ab.floor_layer(m, "san", "paper") == 3
    assert ab.floor_layer(m, "san", "clean") is None  # it ends at 1e-4: never below 1e-12
    assert ab.floor_layer(m, "san", "clean", level=1e-3) == 5
    assert ab.drop(m, "san", "paper") == pytest.approx(1e16)


def test_centres_on_minilm(minilm):
    c = S.centres(minilm, 1, 8, variants=("full",))
    ratio = c.ratio("full")
    assert ratio.shape == (1, 7) and np.all(ratio <= 1 + 1e-9)  # the optimal centre is never worse
    assert np.all(
        ratio >= 0.5 - 1e-9
    )  # and at most twice better (chapter "Pure attention collapses")
    np.testing.assert_allclose(c.typical("full", "optimal"), c.optimal["full"][0], rtol=1e-12)
    np.testing.assert_allclose(c.typical("full"), c.mean["full"][0], rtol=1e-12)


def test_path_products_medians(minilm):
    p = S.path_products_study([minilm], 1, 10, 3, seed=0, batch_size=1)
    assert set(p.profiles) == {
        (minilm.label, o, a) for o in ("correct", "reversed") for a in ("mean", "rank1")
    }
    med = p.medians(minilm, "correct", "mean")
    assert med.shape == (6,)  # six layers: paths of one to six heads
    np.testing.assert_allclose(med, np.median(p.profiles[(minilm.label, "correct", "mean")], 0))
    assert p.median(minilm, "correct", "mean", 1) == med[0]
    assert p.median(minilm, "reversed", "rank1", 6) == p.medians(minilm, "reversed", "rank1")[5]


@pytest.fixture(scope="module")
def albert():
    return rc.real.load("albert-base-v2", False, 0)


def test_applied_again_is_the_same_layer_applied_more_times(albert):
    deep = S.applied_again(albert, 20)
    assert deep.n_layers == 20 and albert.n_layers == 12
    assert deep.hf.config.num_hidden_layers == 20 and albert.hf.config.num_hidden_layers == 12
    for key, value in albert.hf.state_dict().items():  # the same weights, bit for bit
        assert torch.equal(deep.hf.state_dict()[key], value), key
    ids = rc.real.token_windows(albert, 1, 8)
    short = rc.real.hidden_states(albert, ids, "san+skip", "clean")
    long = rc.real.hidden_states(deep, ids, "san+skip", "clean")
    assert long.shape[0] == 21
    # the first 12 layers of the deep model are the 12 layers of the original
    torch.testing.assert_close(long[:13], short, rtol=0, atol=0)
    # and transformers' own forward of the deep model agrees with the converted network
    with torch.no_grad():
        hf = deep.hf.double()(ids, output_hidden_states=True).hidden_states
        deep.hf.float()
    converted = rc.real.hidden_states(deep, ids, "full", "clean")
    torch.testing.assert_close(converted[-1], hf[-1], rtol=1e-9, atol=1e-9)


def test_applied_again_refuses_a_model_without_one_shared_layer(minilm):
    with pytest.raises(ValueError, match="ALBERT"):
        S.applied_again(minilm, 12)
    with pytest.raises(TypeError, match="RealModel"):
        S.applied_again("albert-base-v2", 12)


def test_deeper_study_reads_its_curves(albert):
    d = S.deeper_study([albert], 16, 1, 8, variants=("san+skip",))
    assert (d.native, d.n_layers, d.n_models, d.variants) == (12, 16, 1, ("san+skip",))
    curve = d.curves[(0, "san+skip")]
    assert curve.shape == (1, 17)
    np.testing.assert_allclose(d.typical(0, "san+skip"), curve[0], rtol=1e-12)
    assert d.at("san+skip", 16) == pytest.approx([curve[0, 16]], rel=1e-12)
    expected = np.log10(curve[0, 4] / curve[0, 16]) / 12
    assert d.decades_per_layer("san+skip", 4, 16) == pytest.approx([expected], rel=1e-12)
    with pytest.raises(ValueError, match="models"):
        S.deeper_study([], 16, 1, 8)
