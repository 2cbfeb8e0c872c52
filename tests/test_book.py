import pytest

import rankcollapse as rc


@pytest.mark.parametrize(
    "x, text",
    [(3.2e-15, "3.2 × 10⁻¹⁵"), (1e-7, "1.0 × 10⁻⁷"), (0.85, "0.85"), (12345.0, "1.2 × 10⁴"), (0.0, "0"), (2.5, "2.5")],
)
def test_fmt_sci(x, text):
    assert rc.book.fmt_sci(x) == text


def test_formatted_shows_its_text():
    f = rc.book.Formatted(0.123456, "0.12")
    assert repr(f) == "0.12" and f.value == 0.123456


def test_setup_seeds_and_validates():
    import torch

    rc.book.setup(5)
    a = torch.rand(3)
    rc.book.setup(5)
    assert torch.equal(a, torch.rand(3))
    with pytest.raises(ValueError, match="seed"):
        rc.book.setup(-2)


def test_glue_formats_and_hands_the_value_to_myst_nb(monkeypatch):
    import myst_nb

    seen = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: seen.append((name, repr(value), display)))
    rc.book.glue("a", 3.2e-15, "sci")
    rc.book.glue("b", 0.123456, "{:.2f}", display=True)
    assert seen == [("a", "3.2 × 10⁻¹⁵", False), ("b", "0.12", True)]
    with pytest.raises(ValueError, match="name"):
        rc.book.glue("", 1.0)


def test_without_myst_nb_glue_is_quiet_and_figures_are_shown(monkeypatch):
    """On Colab (no myst-nb) a chapter still runs: glued numbers have no prose to go to, figures show."""
    import sys

    import IPython.display
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # `from myst_nb import ...` raises ImportError
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    rc.book.glue("quiet", 1.5, "{:.1f}")
    assert shown == []
    rc.book.glue("loud", 1.5, "{:.1f}", display=True)
    assert [repr(x) for x in shown] == ["1.5"]
    fig, _ = plt.subplots()
    rc.book.glue_figure("fig", fig)
    assert shown[-1] is fig and not plt.fignum_exists(fig.number)
