"""The figure helpers draw what they are given (smoke tests on a non-interactive backend)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import rankbook as book
import rankcollapse as rc  # noqa: E402


def test_path_diagram_draws_each_highlighted_path():
    ax = book.plotting.path_diagram(L=3, H=2)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [label.split(":")[0] for label in labels] == [
        "length 0",
        "length 1",
        "length 2",
        "length 3",
    ]
    with pytest.raises(ValueError, match="one entry per layer"):
        book.plotting.path_diagram(L=2, H=2, highlight=[(0, 1, 0)])
    plt.close("all")


def test_curve_with_band_log_space():
    fig, ax = plt.subplots()
    vals = np.array([[1.0, 1e-3], [1.0, 1e-5]])
    line = book.plotting.curve_with_band(ax, [0, 1], vals)
    assert np.allclose(line.get_ydata(), [1.0, 1e-4])  # geometric mean
    assert ax.get_yscale() == "log"
    plt.close(fig)


def test_length_distributions_plots_each_architecture():
    rows = [
        (a.name, a.n_layers, a.n_heads, rc.paths.length_distribution(a.n_layers, a.n_heads).numpy())
        for a in book.presets.ARCHITECTURES
    ]
    axes = book.plotting.length_distributions(rows)
    shapes = {(a.n_layers, a.n_heads) for a in book.presets.ARCHITECTURES}
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
    book.plotting.use_book_style()
    yield
    mpl.rcParams.update(saved)


def test_svg_output_is_deterministic(book_style):
    """Two renders of the same figure give the same bytes: no date, no random ids."""

    def draw():
        fig, ax = plt.subplots(layout="constrained")
        book.plotting.curve_with_band(
            ax, np.arange(4), np.array([[1.0, 0.1, 0.01, 1e-3], [2.0, 0.2, 0.02, 2e-3]]), label="a"
        )
        ax.legend()
        data = book.plotting.svg_bytes(fig)
        plt.close(fig)
        return data

    first, second = draw(), draw()
    assert first == second
    assert b"<dc:date>" not in first
    assert b'width="504pt"' in first  # the figure's own size (7 inches), not a tight crop


def test_figure_problems_finds_small_clipped_and_overlapping_text(book_style):
    fig, ax = plt.subplots(figsize=(book.plotting.WIDTH, 3.0), layout="constrained")
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    assert book.plotting.figure_problems(fig) == []
    ax.text(0.5, 0.5, "tiny", fontsize=7)
    ax.text(0.1, 0.9, "one label", fontsize=10)
    ax.text(0.1, 0.9, "another", fontsize=10)
    fig.text(0.99, 0.5, "running off the edge", fontsize=10)
    problems = book.plotting.figure_problems(fig)
    assert any("'tiny' is 7.0 pt" in p for p in problems)
    assert any("overlap" in p and "one label" in p for p in problems)
    assert any("outside the figure" in p for p in problems)
    with pytest.raises(ValueError, match="not legible"):
        book.glue_figure("fig-test", fig)
    plt.close("all")


def test_a_wide_figure_is_shrunk_on_the_page_and_its_text_with_it(book_style):
    fig, ax = plt.subplots(figsize=(2 * book.plotting.COLUMN_INCHES, 3.0), layout="constrained")
    ax.set_xlabel("ten points", fontsize=10)  # shown at half size: 5 pt
    assert any("'ten points' is 5.0 pt" in p for p in book.plotting.figure_problems(fig))
    plt.close(fig)


def test_the_book_figures_are_legible(book_style):
    """The drawings the chapters share, at the book's width, pass the page's check (the rank
    panel's 7-point labels, the real-models panels' colliding titles and the 9.6-inch MLP figure
    did not)."""
    rng = np.random.default_rng(0)
    # the LayerNorm chapter's rank panel at its fast and full sizes (ranks 1..10 of 200 inputs,
    # 1..16 of 2,000: the full size's three-digit counts written in discs once overlapped)
    for top, count in ((11, 200), (17, 2000)):
        fig, axes = plt.subplots(
            1,
            2,
            figsize=(book.plotting.WIDTH, 3.6),
            layout="constrained",
            gridspec_kw=dict(width_ratios=[1.4, 1]),
        )
        before = rng.integers(1, top, count)
        after = np.where(rng.random(count) < 0.3, before - 1, before)
        book.plotting.rank_change_bars(before, after, ax=axes[1])
        assert book.plotting.figure_problems(fig) == []
        ticks = axes[1].get_xticks()
        assert np.allclose(ticks, np.round(ticks))  # ranks are whole numbers
        heights = sum(p.get_height() for p in axes[1].patches)
        assert heights == count  # every input counted once
        plt.close(fig)
    with pytest.raises(ValueError, match="same length"):
        book.plotting.rank_change_bars([1, 2], [1])

    fig, axes = plt.subplots(1, 3, figsize=(book.plotting.WIDTH, 3.0), layout="constrained")
    lam = np.logspace(0, 3, 6)
    book.plotting.mlp_tradeoff(
        lam, rng.random((4, 6)), rng.random((10, 6)) * lam, lam**2, axes=axes
    )
    assert book.plotting.figure_problems(fig) == []
    plt.close(fig)

    fig, axes = plt.subplots(
        1, 2, figsize=(book.plotting.WIDTH, 2.6), sharey=True, layout="constrained"
    )
    for ax, surgery in zip(axes, ("paper", "clean")):
        curves = {v: rng.random((3, 7)) for v in ("san", "san+mlp", "san+skip", "full")}
        book.plotting.ablation_panel(
            ax, curves, title=f"xlnet-base-cased (at initialisation), {surgery} surgery"
        )
    assert book.plotting.figure_problems(fig) == []
    plt.close(fig)


def test_integer_ticks_and_sweep_helpers(book_style):
    fig, ax = plt.subplots()
    ax.plot([0, 9], [0, 3])
    book.plotting.integer_ticks(ax, "both")
    fig.canvas.draw()
    for t in list(ax.get_xticks()) + list(ax.get_yticks()):
        assert float(t).is_integer()
    plt.close(fig)
    assert book.plotting.spread_indices(9, 5) == [0, 2, 4, 6, 8]
    assert book.plotting.spread_indices(3, 5) == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 1"):
        book.plotting.spread_indices(0)
    colours = book.plotting.sequential_colours(5)
    assert len(set(colours)) == 5


def test_fit_to_page_applies_the_width_and_the_minimum_size(book_style):
    """glue_figure mends what a chapter got wrong in size (an 8-inch figure, a 7-point legend),
    so every glued figure is shown at 100% with 9-point text; what it cannot mend raises."""
    fig, ax = plt.subplots(figsize=(8.0, 3.0), layout="constrained")
    ax.plot([0, 1], [0, 1], label="seven points")
    ax.legend(fontsize=7)
    ax.tick_params(labelsize=6)
    before = book.plotting.figure_problems(fig)
    assert any("7.0 pt" in p or "6.1 pt" in p or "pt as shown" in p for p in before)
    changes = book.plotting.fit_to_page(fig)
    assert fig.get_figwidth() == book.plotting.WIDTH and changes
    assert book.plotting.figure_problems(fig) == []
    plt.close(fig)


# ------------------------------------------------------------------ alt text and colour vision


def test_alt_text_says_what_the_figure_shows(book_style):
    """The alt text is read from the figure: panels, titles, axes (label, scale, range), what is
    drawn and the legend; a change to the drawing changes it."""
    fig, axes = plt.subplots(1, 2, figsize=(book.plotting.WIDTH, 3.0), layout="constrained")
    book.plotting.curve_with_band(
        axes[0],
        np.arange(1, 5),
        np.array([[1.0, 1e-2, 1e-4, 1e-8], [1.0, 1e-3, 1e-6, 1e-9]]),
        label=r"$\lambda = 0.5$",
    )
    axes[0].axhline(1e-3, color=book.plotting.INK, ls=":")
    axes[0].set(
        xlabel="depth $L$",
        ylabel=r"$\Vert \mathrm{res}(X_L)\Vert_{1,\infty}$",
        title="(a) pure attention",
    )
    axes[0].legend()
    axes[1].bar(["BERT", "ALBERT", "XLNet"], [3, 2, 1])
    axes[1].set(title="(b) ranks")
    alt = book.plotting.alt_text(fig)
    for part in (
        "2 panels",
        "“(a) pure attention”",
        "x axis “depth L”, from 1 to 4",
        "log scale",
        "“‖res(X_L)‖_1,∞”",
        "1 curve",
        "1 shaded band",
        "1 horizontal reference line",
        "legend “λ=0.5”",
        "“(b) ranks”",
        "categories “BERT”, “ALBERT” and “XLNet”",
        "3 bars",
    ):
        assert part in alt, (part, alt)
    axes[0].set_title("(a) another title")
    assert "another title" in book.plotting.alt_text(fig)
    plt.close(fig)

    ax = book.plotting.path_diagram(L=2, H=2, highlight=((None, None), (0, 1)))
    alt = book.plotting.alt_text(ax.figure)
    assert (
        alt.startswith("A diagram:") and "“P^(1)_1”" in alt and "length 2: head 1, head 2" in alt
    ), alt
    plt.close("all")


@pytest.mark.parametrize(
    "label, text",
    [
        (r"$\|\mathrm{res}(P_p)\| / \|P_p\|$", "‖res(P_p)‖/‖P_p‖"),
        (r"correct order, $\mathbf{1}x^\top$", "correct order, 1xᵀ"),
        (r"$\frac{a}{b} \le \sqrt{d}$", "a/b≤√d"),
        (r"slope $\log 3$", "slope log 3"),
        ("plain words", "plain words"),
    ],
)
def test_formulas_in_labels_are_read_as_plain_text(label, text):
    assert book.plotting.plain_text(label) == text


def test_a_glued_figure_carries_its_alt_text(book_style):
    fig, ax = plt.subplots(figsize=(book.plotting.WIDTH, 3.0), layout="constrained")
    ax.plot([0, 1], [0, 1], label="a line")
    ax.legend()
    shown = book.FigureSVG.of(fig)
    bundle = shown._repr_mimebundle_()
    assert bundle["text/plain"] == shown.alt == book.plotting.alt_text(fig)
    assert f"<dc:description>{shown.alt}</dc:description>" in bundle["image/svg+xml"]
    plt.close(fig)
    with pytest.raises(ValueError, match="alt text"):
        book.FigureSVG("<svg/>", " ")
    empty = plt.figure()  # nothing drawn: nothing to describe, so it is refused
    with pytest.raises(ValueError, match="nothing to describe"):
        book.glue_figure("fig-empty", empty)


# Colour vision: every pair of colours that may share a panel stays this far apart (CIEDE2000)
# under each complete dichromacy, simulated by Machado, Oliveira and Fernandes (2009) with
# coloraide. About 10 is a difference seen at a glance between two lines side by side; in normal
# vision the palette's closest pair is 22.
MIN_DELTA_E = 10.0
DEFICIENCIES = ("protan", "deutan", "tritan")


def _closest_pair(colours, deficiency):
    from itertools import combinations

    from coloraide import Color

    seen = [Color(c).filter(deficiency, 1.0, method="machado") for c in colours]
    return min(
        (seen[i].delta_e(seen[j], method="2000"), colours[i], colours[j])
        for i, j in combinations(range(len(colours)), 2)
    )


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
def test_palette_is_distinguishable_under_colour_vision_deficiencies(deficiency):
    """The first six colours of book.plotting.PALETTE (at most six curves share a panel:
    CONTRIBUTING) and the sequential colours of a sweep of up to five (book.plotting.spread_indices'
    default) stay MIN_DELTA_E apart for protanopia, deuteranopia and tritanopia."""
    import matplotlib.colors as mcolors

    distance, a, b = _closest_pair(book.plotting.PALETTE[:6], deficiency)
    assert distance >= MIN_DELTA_E, f"{deficiency}: {a} and {b} are {distance:.1f} apart"
    for count in range(2, 6):
        colours = [mcolors.to_hex(c) for c in book.plotting.sequential_colours(count)]
        distance, a, b = _closest_pair(colours, deficiency)
        assert distance >= MIN_DELTA_E, (
            f"{deficiency}, {count} sequential colours: {a} and {b} are {distance:.1f}"
        )


def test_the_colour_check_catches_confusable_colours():
    """A control: red and green of equal lightness, told apart in normal vision, merge for a
    deuteranope."""
    distance, _, _ = _closest_pair(["#d62728", "#7f7f00"], "deutan")
    assert distance < MIN_DELTA_E


def test_power_law_and_attention_maps_draw_what_they_are_given():
    fig, ax = plt.subplots()
    x = np.array([[1e-4, 1e-2, 1.0]] * 2)
    book.plotting.power_law(ax, x, 0.3 * x)
    assert len(ax.get_lines()) == 3 and ax.get_xscale() == ax.get_yscale() == "log"
    ref = ax.get_lines()[-1]
    assert np.allclose(np.diff(np.log(ref.get_ydata())) / np.diff(np.log(ref.get_xdata())), 1.0)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    P = np.full((3, 3), 1 / 3)
    image = book.plotting.attention_maps(axes, [np.eye(3), P], ["layer 1", "layer 2"])
    assert image.get_clim() == (0.0, 1.0) and axes[1].get_title() == "layer 2"
    plt.close(fig)
