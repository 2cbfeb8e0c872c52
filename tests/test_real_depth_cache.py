"""rc.real.depth_cache: a depth run computed once, then read back identical; keyed by its
settings and the code; a damaged file computed again; the study the same with and without it."""

import numpy as np
import pytest

from rankcollapse.real import depth, depth_cache, depth_study

pytest.importorskip("transformers")

SMALL = dict(width=16, heads=2, layers={"gpt2": 2, "albert-base-v2": 2})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKCOLLAPSE_CACHE", str(tmp_path))
    return tmp_path / "depth"


def _study(cache_on, **kw):
    return depth_study.depth_study(
        ["gpt2"], 3, 1, 2, 6, factors=(1, 2), pretrained=False, cache=cache_on, **SMALL, **kw
    )


def _same(a, b):
    assert set(a.curves) == set(b.curves) and set(a.constants) == set(b.constants)
    for k in a.curves:
        np.testing.assert_array_equal(a.curves[k], b.curves[k])
    for k in a.curves:
        np.testing.assert_array_equal(a.residual_norms[k], b.residual_norms[k])
        np.testing.assert_array_equal(a.mean_norms[k], b.mean_norms[k])
    assert a.underflow == b.underflow
    for k in a.constants:
        np.testing.assert_array_equal(a.constants[k], b.constants[k])
    assert (a.name, a.seed, a.n_layers, a.factors, a.dtypes, a.causal) == (
        b.name,
        b.seed,
        b.n_layers,
        b.factors,
        b.dtypes,
        b.causal,
    )


def test_a_run_is_computed_once_and_read_back_identical(cache, monkeypatch):
    calls = []
    real = depth_study.depth_run
    monkeypatch.setattr(depth_study, "depth_run", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = _study(True)
    again = _study(True)
    assert len(calls) == 1 and len(list(cache.glob("gpt2-*.npz"))) == 1
    _same(first.runs["gpt2"][0], again.runs["gpt2"][0])
    assert ("scaled", 2) in again.runs["gpt2"][0].curves  # tuple keys survive the file
    _same(first.runs["gpt2"][0], _study(False).runs["gpt2"][0])  # the same without the cache
    assert len(calls) == 2
    _study(True, float32=("full",))  # another setting: another file
    assert len(calls) == 3 and len(list(cache.glob("gpt2-*.npz"))) == 2


def test_the_key_holds_the_settings_and_the_code(cache, monkeypatch):
    settings = dict(name="gpt2", seed=1, width=16)
    a = depth_cache.run_path(settings)
    assert a == depth_cache.run_path(dict(settings))
    assert a != depth_cache.run_path(dict(settings, seed=2))
    monkeypatch.setattr(depth_cache, "depth_code_hash", lambda: "other code")
    assert a != depth_cache.run_path(settings)
    with pytest.raises(ValueError, match="settings"):
        depth_cache.cached_run({"seed": 1}, lambda: None)


def test_a_damaged_file_is_computed_again(cache):
    model = depth.build("gpt2", 0, width=16, heads=2, layers=2)
    ids = depth.texts(model, 1, 5)
    settings = dict(name="gpt2", seed=0, probe="damaged")
    run, cached = depth_cache.cached_run(
        settings, lambda: depth.depth_run(model, ids, 0, factors=(1, 2), float32=())
    )
    assert not cached
    depth_cache.run_path(settings).write_bytes(b"not a numpy file")
    again, cached = depth_cache.cached_run(settings, lambda: run)
    assert not cached
    _, cached = depth_cache.cached_run(settings, lambda: 1 / 0)
    assert cached


def test_cache_must_be_a_bool(cache):
    with pytest.raises(TypeError, match="cache"):
        _study("yes")
