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
