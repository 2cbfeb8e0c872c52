"""The figure helpers draw what they are given (smoke tests on a non-interactive backend)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import rankcollapse as rc  # noqa: E402


def test_path_diagram_draws_each_highlighted_path():
    ax = rc.plotting.path_diagram(L=3, H=2)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [label.split(":")[0] for label in labels] == ["length 0", "length 1", "length 2", "length 3"]
    with pytest.raises(ValueError, match="one entry per layer"):
        rc.plotting.path_diagram(L=2, H=2, highlight=[(0, 1, 0)])
    plt.close("all")


def test_curve_with_band_log_space():
    fig, ax = plt.subplots()
    vals = np.array([[1.0, 1e-3], [1.0, 1e-5]])
    line = rc.plotting.curve_with_band(ax, [0, 1], vals)
    assert np.allclose(line.get_ydata(), [1.0, 1e-4])  # geometric mean
    assert ax.get_yscale() == "log"
    plt.close(fig)


def test_length_distributions_plots_each_architecture():
    rows = [(a.name, a.n_layers, a.n_heads, rc.paths.length_distribution(a.n_layers, a.n_heads).numpy())
            for a in rc.presets.ARCHITECTURES]
    axes = rc.plotting.length_distributions(rows)
    shapes = {(a.n_layers, a.n_heads) for a in rc.presets.ARCHITECTURES}
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert len(labels) == len(shapes)  # architectures of the same shape share a curve
    assert any("BERT-base" in t and "ALBERT-base" in t for t in labels)
    assert axes[1].get_yscale() == "log"
    plt.close("all")

