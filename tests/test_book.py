import pytest

import rankbook as book


@pytest.mark.parametrize(
    "x, text",
    [
        (3.2e-15, "3.2 × 10⁻¹⁵"),
        (1e-7, "1.0 × 10⁻⁷"),
        (0.85, "0.85"),
        (12345.0, "1.2 × 10⁴"),
        (0.0, "0"),
        (2.5, "2.5"),
    ],
)
def test_fmt_sci(x, text):
    assert book.fmt_sci(x) == text


def test_fmt_sci_digits_and_markdown_table_header_are_checked():
    assert book.fmt_sci(3.2e-15, digits=1) == "3.2 × 10⁻¹⁵" and book.fmt_sci(0.5, digits=3) == "0.5"
    # never e-notation in prose: where digits + 1 significant digits cannot show the value plainly
    assert book.fmt_sci(1234.5, digits=0) == "1 × 10³" and book.fmt_sci(123.0) == "1.2 × 10²"
    assert (
        book.fmt_sci(999.96) == "1.0 × 10³" and book.fmt_sci(9.996) == "10"
    )  # rounding into the next decade
    for digits, error in ((-1, ValueError), (17, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="digits"):
            book.fmt_sci(1.5, digits=digits)
    assert book.markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|:--|--:|\n| 1 | 2 |"
    with pytest.raises(ValueError, match="header"):
        book.markdown_table([], [])


def test_formatted_shows_its_text():
    f = book.Formatted(0.123456, "0.12")
    assert repr(f) == "0.12" and f.value == 0.123456


def _draws():
    import random

    import numpy as np
    import torch

    return random.random(), float(np.random.rand()), float(torch.rand(()))


def test_start_seeds_every_generator_from_the_seed(monkeypatch):
    """The seed passed to start (the parameters cell's) seeds Python, numpy and torch."""
    monkeypatch.delenv(book.presets.ENV_VAR, raising=False)
    run = book.start("paths", "fast", 5)
    assert (run.chapter, run.mode, run.seed) == ("paths", "fast", 5)
    first = _draws()
    book.start("paths", "fast", 5)
    assert _draws() == first
    book.start("paths", "fast", 6)
    assert all(a != b for a, b in zip(_draws(), first))


def test_start_applies_the_mode_override_threads_and_style(monkeypatch, capsys):
    import matplotlib as mpl
    import torch

    monkeypatch.setenv(book.presets.ENV_VAR, "fast")
    monkeypatch.setenv("RANKCOLLAPSE_THREADS", "1")
    before = torch.get_num_threads()
    mpl.rcParams["figure.figsize"] = (1.0, 1.0)
    try:
        assert book.start("skip", "full", 0).mode == "fast"
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert "overrides mode='full'" in capsys.readouterr().out
    assert tuple(mpl.rcParams["figure.figsize"]) == (
        book.plotting.WIDTH,
        3.4,
    )  # the book's style (book.plotting)
    monkeypatch.setenv("RANKCOLLAPSE_THREADS", "two")
    with pytest.raises(ValueError, match="RANKCOLLAPSE_THREADS must be a positive integer"):
        book.start("skip", "full", 0)


@pytest.mark.parametrize(
    "seed, error",
    [
        (-2, ValueError),
        (2**32, ValueError),
        (2**70, ValueError),
        (1.5, TypeError),
        ("0", TypeError),
        (True, TypeError),
    ],
)
def test_start_refuses_a_bad_seed_before_seeding(seed, error, monkeypatch):
    import torch

    monkeypatch.delenv(book.presets.ENV_VAR, raising=False)
    state = torch.random.get_rng_state()
    with pytest.raises(error, match="seed"):
        book.start("paths", "fast", seed)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_one_seed_range_for_presets_start_and_numpy(monkeypatch):
    """The largest seed the library accepts is one numpy accepts; one more is refused by both."""
    import numpy as np

    from rankcollapse._validate import SEED_LIMIT, check_seed

    monkeypatch.delenv(book.presets.ENV_VAR, raising=False)
    top = SEED_LIMIT - 1
    np.random.seed(top)
    assert (
        book.presets.get("paths", "fast", top).seed == top == book.start("paths", "fast", top).seed
    )
    with pytest.raises(ValueError):
        np.random.seed(SEED_LIMIT)
    for call in (
        lambda: check_seed("seed", SEED_LIMIT),
        lambda: book.presets.get("paths", "fast", SEED_LIMIT),
    ):
        with pytest.raises(ValueError, match=r"seed must be <= 4294967295"):
            call()
    with pytest.raises(ValueError, match="mode"):
        book.start("paths", "medium", 0)
    with pytest.raises(ValueError, match="chapter"):
        book.start("no-such-chapter", "fast", 0)


def test_glue_formats_and_hands_the_value_to_myst_nb(monkeypatch):
    import myst_nb

    seen = []
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display: seen.append((name, repr(value), display))
    )
    book.glue("a", 3.2e-15, "sci")
    book.glue("b", 0.123456, "{:.2f}", display=True)
    assert seen == [("a", "3.2 × 10⁻¹⁵", False), ("b", "0.12", True)]
    with pytest.raises(ValueError, match="name"):
        book.glue("", 1.0)


def test_without_myst_nb_glue_is_quiet_and_figures_are_shown(monkeypatch):
    """On Colab (no myst-nb) a chapter still runs: glued numbers have no prose to go to, figures
    show."""
    import sys

    import IPython.display
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setitem(
        sys.modules, "myst_nb", None
    )  # `from myst_nb import ...` raises ImportError
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    book.glue("quiet", 1.5, "{:.1f}")
    assert shown == []
    book.glue("loud", 1.5, "{:.1f}", display=True)
    assert [repr(x) for x in shown] == ["1.5"]
    fig, _ = plt.subplots()
    book.glue_figure("fig", fig)
    # the figure as the book shows it: its SVG, with its alt text (what a text-only front end shows)
    assert isinstance(shown[-1], book.FigureSVG) and not plt.fignum_exists(fig.number)
    assert shown[-1].svg.lstrip().startswith("<?xml") and repr(shown[-1]) == shown[-1].alt
    assert shown[-1].alt.startswith("A chart: x axis, from 0 to 1")


@pytest.mark.parametrize(
    "log10_value, text",
    [
        (-15.5, "3.2 × 10⁻¹⁶"),
        (-299.0, "1.0 × 10⁻²⁹⁹"),
        (-300.0, "below 10⁻³⁰⁰"),
        (float("-inf"), "below 10⁻³⁰⁰"),
        (float("nan"), "below 10⁻³⁰⁰"),
    ],
)
def test_fmt_sci_log10_says_when_a_value_has_underflowed(log10_value, text):
    assert book.fmt_sci_log10(log10_value) == text


# ------------------------------------------------------------------ tables


def test_table_renders_as_markdown_html_and_text():
    t = book.Table(["model", "layers", "a|b"], [["BERT", 12, "x"], ["GPT-3", 96, "y"]])
    md = t._repr_markdown_()
    assert md.splitlines()[:2] == ["| model | layers | a\\|b |", "|:--|--:|--:|"]
    assert (
        "<table>" in t._repr_html_() and '<td style="text-align:right">96</td>' in t._repr_html_()
    )
    assert repr(t).splitlines()[2].startswith("BERT ")
    ranges = book.Table(["model", "Omega"], [["BERT", "0.445 to 0.555"], ["GPT-2", "0.12"]])
    html = ranges._repr_html_()  # a range of numbers may wrap at its spaces, a number not
    assert '<td style="text-align:right; white-space:normal">0.445 to 0.555</td>' in html
    assert '<td style="text-align:right">0.12</td>' in html
    with pytest.raises(ValueError, match="3 cells"):
        book.Table(["a", "b", "c"], [[1, 2]])
    with pytest.raises(ValueError, match="align"):
        book.Table(["a"], [[1]], align="x")


def test_a_transposed_table_reads_down_the_page():
    t = book.Table(
        ["task", "paths", "length 0", "length 1"],
        [["sorting", "729", "0.275", "0.758"], ["convex hull", "4,096", "0.403", ""]],
    )
    turned = t.transpose()
    assert turned.header == ["task", "sorting", "convex hull"]
    assert turned.rows == [
        ["paths", "729", "4,096"],
        ["length 0", "0.275", "0.403"],
        ["length 1", "0.758", ""],
    ]
    assert turned.align == "lrr"
    assert turned.transpose().rows == t.rows  # turned twice: the same cells
