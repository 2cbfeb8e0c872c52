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


# ------------------------------------------------------------------ the page's figure style


@pytest.fixture
def book_style():
    import matplotlib as mpl

    saved = dict(mpl.rcParams)
    rc.plotting.use_book_style()
    yield
    mpl.rcParams.update(saved)


def test_svg_output_is_deterministic(book_style):
    """Two renders of the same figure give the same bytes: no date, no random ids."""

    def draw():
        fig, ax = plt.subplots(layout="constrained")
        rc.plotting.curve_with_band(ax, np.arange(4), np.array([[1.0, 0.1, 0.01, 1e-3], [2.0, 0.2, 0.02, 2e-3]]),
                                    label="a")
        ax.legend()
        data = rc.plotting.svg_bytes(fig)
        plt.close(fig)
        return data

    first, second = draw(), draw()
    assert first == second
    assert b"<dc:date>" not in first
    assert b'width="504pt"' in first  # the figure's own size (7 inches), not a tight crop


def test_figure_problems_finds_small_clipped_and_overlapping_text(book_style):
    fig, ax = plt.subplots(figsize=(rc.plotting.WIDTH, 3.0), layout="constrained")
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    assert rc.plotting.figure_problems(fig) == []
    ax.text(0.5, 0.5, "tiny", fontsize=7)
    ax.text(0.1, 0.9, "one label", fontsize=10)
    ax.text(0.1, 0.9, "another", fontsize=10)
    fig.text(0.99, 0.5, "running off the edge", fontsize=10)
    problems = rc.plotting.figure_problems(fig)
    assert any("'tiny' is 7.0 pt" in p for p in problems)
    assert any("overlap" in p and "one label" in p for p in problems)
    assert any("outside the figure" in p for p in problems)
    with pytest.raises(ValueError, match="not legible"):
        rc.book.glue_figure("fig-test", fig)
    plt.close("all")


def test_a_wide_figure_is_shrunk_on_the_page_and_its_text_with_it(book_style):
    fig, ax = plt.subplots(figsize=(2 * rc.plotting.COLUMN_INCHES, 3.0), layout="constrained")
    ax.set_xlabel("ten points", fontsize=10)  # shown at half size: 5 pt
    assert any("'ten points' is 5.0 pt" in p for p in rc.plotting.figure_problems(fig))
    plt.close(fig)


def test_the_book_figures_are_legible(book_style):
    """The drawings the chapters share, at the book's width, pass the page's check (the rank
    panel's 7-point labels, the real-models panels' colliding titles and the 9.6-inch MLP figure
    did not)."""
    rng = np.random.default_rng(0)
    # the LayerNorm chapter's rank panel at its fast and full sizes (ranks 1..10 of 200 inputs,
    # 1..16 of 2,000: the full size's three-digit counts written in discs once overlapped)
    for top, count in ((11, 200), (17, 2000)):
        fig, axes = plt.subplots(1, 2, figsize=(rc.plotting.WIDTH, 3.6), layout="constrained",
                                 gridspec_kw=dict(width_ratios=[1.4, 1]))
        before = rng.integers(1, top, count)
        after = np.where(rng.random(count) < 0.3, before - 1, before)
        rc.plotting.rank_change_bars(before, after, ax=axes[1])
        assert rc.plotting.figure_problems(fig) == []
        ticks = axes[1].get_xticks()
        assert np.allclose(ticks, np.round(ticks))  # ranks are whole numbers
        heights = sum(p.get_height() for p in axes[1].patches)
        assert heights == count  # every input counted once
        plt.close(fig)
    with pytest.raises(ValueError, match="same length"):
        rc.plotting.rank_change_bars([1, 2], [1])

    fig, axes = plt.subplots(1, 3, figsize=(rc.plotting.WIDTH, 3.0), layout="constrained")
    lam = np.logspace(0, 3, 6)
    rc.plotting.mlp_tradeoff(lam, rng.random((4, 6)), rng.random((10, 6)) * lam, lam ** 2, axes=axes)
    assert rc.plotting.figure_problems(fig) == []
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(rc.plotting.WIDTH, 2.6), sharey=True, layout="constrained")
    for ax, surgery in zip(axes, ("paper", "clean")):
        curves = {v: rng.random((3, 7)) for v in ("san", "san+mlp", "san+skip", "full")}
        rc.plotting.ablation_panel(ax, curves, title=f"xlnet-base-cased (at initialisation), {surgery} surgery")
    assert rc.plotting.figure_problems(fig) == []
    plt.close(fig)


def test_integer_ticks_and_sweep_helpers(book_style):
    fig, ax = plt.subplots()
    ax.plot([0, 9], [0, 3])
    rc.plotting.integer_ticks(ax, "both")
    fig.canvas.draw()
    for t in list(ax.get_xticks()) + list(ax.get_yticks()):
        assert float(t).is_integer()
    plt.close(fig)
    assert rc.plotting.spread_indices(9, 5) == [0, 2, 4, 6, 8]
    assert rc.plotting.spread_indices(3, 5) == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 1"):
        rc.plotting.spread_indices(0)
    colours = rc.plotting.sequential_colours(5)
    assert len(set(colours)) == 5


def test_fit_to_page_applies_the_width_and_the_minimum_size(book_style):
    """glue_figure mends what a chapter got wrong in size (an 8-inch figure, a 7-point legend),
    so every glued figure is shown at 100% with 9-point text; what it cannot mend raises."""
    fig, ax = plt.subplots(figsize=(8.0, 3.0), layout="constrained")
    ax.plot([0, 1], [0, 1], label="seven points")
    ax.legend(fontsize=7)
    ax.tick_params(labelsize=6)
    before = rc.plotting.figure_problems(fig)
    assert any("7.0 pt" in p or "6.1 pt" in p or "pt as shown" in p for p in before)
    changes = rc.plotting.fit_to_page(fig)
    assert fig.get_figwidth() == rc.plotting.WIDTH and changes
    assert rc.plotting.figure_problems(fig) == []
    plt.close(fig)
