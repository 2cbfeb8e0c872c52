"""The live explorer: its grid is what the library measures, and its page fragment is
self-contained."""

import json
import re

import numpy as np
import pytest
import torch

import rankbook as book
import rankcollapse as rc

SIZES = dict(L=4, scales=(0.2, 1.0), strengths=(0.0, 0.5, 1.0), n=6, d=8, H=2, samples=2, seed=3)


@pytest.fixture(scope="module")
def grid():
    return book.explorer.skip_strength_grid(**SIZES)


def test_strength_one_is_the_skip_connection_and_zero_pure_attention(gen):
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8)
    X = torch.randn(5, 8, dtype=torch.float64, generator=gen)
    pure, skip = rc.san.SAN(cfg, seed=1), rc.san.SAN(cfg.replace(skip=True), seed=1)
    for ours, theirs in zip(book.explorer.scaled_skip_states(pure, X, 1.0), skip(X).hidden_states):
        assert torch.allclose(ours, theirs, atol=1e-12)
    for ours, theirs in zip(book.explorer.scaled_skip_states(pure, X, 0.0), pure(X).hidden_states):
        assert torch.allclose(ours, theirs, atol=1e-12)
    with pytest.raises(ValueError, match="strength"):
        book.explorer.scaled_skip_states(pure, X, -1.0)
    with pytest.raises(ValueError, match="pure-attention"):
        book.explorer.scaled_skip_states(rc.san.SAN(cfg.replace(mlp=4), seed=1), X, 1.0)


def test_grid_shapes_and_values(grid):
    m, b = np.array(grid["measured"]), np.array(grid["bound"])
    assert m.shape == (2, 3, SIZES["L"] + 1) and b.shape == (2, SIZES["L"] + 1)
    assert np.allclose(m[:, :, 0], 0.0)  # ratio 1 at the input
    assert np.all(np.isfinite(m)) and np.all(np.isfinite(b))
    # pure attention (strength 0) stays under its bound; the full skip keeps far more residual
    assert np.all(m[:, 0] <= b + 1e-9)
    assert np.all(m[:, 2, -1] > m[:, 0, -1])
    # the same numbers as the theory module's tracked residual, averaged in log10 over samples
    gen = torch.Generator().manual_seed(SIZES["seed"])
    Xs = [
        rc.theory.unit_residual_tokens(SIZES["n"], SIZES["d"], generator=gen)
        for _ in range(SIZES["samples"])
    ]
    cfg = rc.san.SANConfig(
        n_layers=SIZES["L"], n_heads=SIZES["H"], d_model=SIZES["d"], init_scale=1.0
    )
    logs = [
        rc.theory.tracked_residual(rc.san.SAN(cfg, seed=SIZES["seed"] + s), X, log10=True).numpy()
        for s, X in enumerate(Xs)
    ]
    assert np.allclose(m[1, 0], np.clip(np.mean(logs, axis=0), -320, None), atol=1e-3)
    json.dumps(grid, allow_nan=False)  # embeddable as JSON


def test_grid_is_deterministic(grid):
    assert book.explorer.skip_strength_grid(**SIZES) == grid


def test_grid_bad_input():
    with pytest.raises(ValueError, match="strengths"):
        book.explorer.skip_strength_grid(**{**SIZES, "strengths": ()})
    with pytest.raises(ValueError, match="scales"):
        book.explorer.skip_strength_grid(**{**SIZES, "scales": (0.0,)})


def test_html_is_self_contained(grid):
    html = book.explorer.explorer_html(grid, uid="t1")
    urls = re.findall(r"(?:src|href)\s*=\s*[\"']([^\"']+)", html)
    assert urls == []  # nothing fetched: no script file, no style sheet, no CDN
    assert "http://www.w3.org/2000/svg" in html  # the SVG namespace, a name, not a download
    assert html.count('type="range"') == 3
    payload = re.search(r'<script type="application/json">(.*?)</script>', html, re.S).group(1)
    assert json.loads(payload)["measured"] == grid["measured"]
    with pytest.raises(ValueError, match="uid"):
        book.explorer.explorer_html(grid, uid="a b")
    with pytest.raises(ValueError, match="grid lacks"):
        book.explorer.explorer_html({"L": 2})


def test_show_displays_once_and_returns_nothing(grid, capsys):
    """A cell ending with show(...) must not display the explorer a second time (as the cell's
    value): the second copy's script would draw into the first and leave itself empty."""
    assert book.explorer.show(grid) is None
