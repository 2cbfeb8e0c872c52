import re

import pytest

import rankbook as book
from booktools.toc import toc_notebooks


def test_every_chapter_has_both_modes():
    for chapter, modes in book.presets.PRESETS.items():
        assert set(modes) == {"fast", "full"}, chapter
        assert set(modes["fast"]) == set(modes["full"]), (
            f"{chapter}: fast and full must set the same sizes"
        )


# a global generator seeded (a torch.Generator's own manual_seed is not global)
GLOBAL_SEEDING = re.compile(r"\btorch\.manual_seed\(|\bnp\.random\.seed\(|(?<![.\w])random\.seed\(")


def test_every_toc_chapter_starts_after_its_parameters_cell():
    """The first code cell only imports; the next is the parameters cell; the next starts the
    chapter with the parameters (so the reader's seed is the one that seeds)."""
    import jupytext

    for path in toc_notebooks():
        code = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
        imports, params, start = code[:3]
        assert "hide-cell" in imports.metadata.get("tags", []), path.name
        assert all(
            line.startswith(("import ", "from "))
            for line in imports.source.splitlines()
            if line.strip()
        ), (
            f"{path.name}: the first code cell must only import (nothing seeds before the "
            "parameters cell)"
        )
        assert params.metadata.get("tags") == ["parameters"], path.name
        assert 'mode = "full"' in params.source and "seed = 0" in params.source, path.name
        assert start.source.splitlines()[0] == f'run = book.start("{path.stem}", mode, seed)', (
            path.name
        )
        rest = "\n".join(c.source for c in code[3:])
        assert "book.start(" not in rest and not GLOBAL_SEEDING.search(rest), (
            f"{path.name} seeds twice"
        )


def test_get_and_attributes(monkeypatch):
    monkeypatch.delenv(book.presets.ENV_VAR, raising=False)
    run = book.presets.get("paths", "fast", 3)
    assert (
        run.mode == "fast" and run.seed == 3 and run.L == book.presets.PRESETS["paths"]["fast"]["L"]
    )
    with pytest.raises(AttributeError, match="no size"):
        _ = run.nonexistent


def test_bad_mode_chapter_seed(monkeypatch):
    monkeypatch.delenv(book.presets.ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="mode"):
        book.presets.get("paths", "medium")
    with pytest.raises(ValueError, match="chapter"):
        book.presets.get("no-such-chapter", "fast")
    with pytest.raises(ValueError, match="seed"):
        book.presets.get("paths", "fast", -1)
    with pytest.raises(ValueError, match="seed"):
        book.presets.get("paths", "fast", 2**70)  # numpy refuses it: the presets do too


def test_environment_override_is_announced(monkeypatch, capsys):
    monkeypatch.setenv(book.presets.ENV_VAR, "fast")
    assert book.presets.get("paths", "full").mode == "fast"
    assert "overrides" in capsys.readouterr().out
    monkeypatch.setenv(book.presets.ENV_VAR, "turbo")
    with pytest.raises(ValueError, match=book.presets.ENV_VAR):
        book.presets.get("paths", "full")


def test_repr_names_every_size_and_fits_an_output_box():
    from rankbook import presets

    for chapter in presets.PRESETS:
        for mode in ("fast", "full"):
            run = presets.get(chapter, mode, 3)
            text = repr(run)
            assert text.startswith(f"Run({chapter!r}, mode={mode!r}, seed=3:")
            assert all(len(line) <= 80 for line in text.splitlines()), text
            flat = " ".join(text.split())  # the wrapped lines joined again
            for key, value in run._sizes.items():
                assert f"{key}={value}" in flat, (key, text)


def test_run_draws_are_the_seeded_torch_streams():
    """run.stream(offset) continues one torch stream seeded with seed + offset, call after call."""
    import torch

    run = book.presets.get("paths", "fast", seed=5)
    gen, ref = run.stream(2), torch.Generator().manual_seed(7)
    assert torch.equal(gen.normal(3, 4), torch.randn(3, 4, dtype=torch.float64, generator=ref))
    assert torch.equal(gen.uniform(4), torch.rand(4, dtype=torch.float64, generator=ref))
    assert gen.integer(1, 6) == int(torch.randint(1, 7, (1,), generator=ref))
    assert torch.equal(gen.normal(2, dtype=torch.float32), torch.randn(2, generator=ref))
    assert gen.normal(2).dtype == torch.float64 and gen.generator.initial_seed() == 7
    assert torch.equal(
        run.stream().normal(5), book.presets.get("paths", "fast", seed=5).stream().normal(5)
    )
    assert not torch.equal(run.stream().normal(5), run.stream(1).normal(5))
    assert {run.stream(3).integer(2, 3) for _ in range(50)} <= {2, 3}


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda r: r.stream(-1), ValueError, "offset must be >= 0"),
        (lambda r: r.stream(1.5), TypeError, "offset must be an integer"),
        (lambda r: r.stream(2**32), ValueError, "offset must be <= 4294967295"),
        (lambda r: r.stream().normal(), ValueError, "at least one dimension"),
        (lambda r: r.stream().normal(3, 0), ValueError, "shape\\[1\\] must be >= 1"),
        (lambda r: r.stream().uniform(2.0), TypeError, "shape\\[0\\] must be an integer"),
        (lambda r: r.stream().normal(2, dtype="int64"), ValueError, "dtype must be"),
        (lambda r: r.stream().integer(3, 2), ValueError, "high must be >= 3"),
    ],
)
def test_run_draws_refuse_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(book.presets.get("paths", "fast", seed=0))


def test_no_preset_size_is_hidden_by_a_run_attribute():
    """Every size of every preset reads back as itself (run.draws once returned a method)."""
    for chapter in book.presets.PRESETS:
        for mode in ("fast", "full"):
            run = book.presets.get(chapter, mode, seed=0)
            for name, value in run.as_dict().items():
                assert getattr(run, name) == value, f"{chapter}/{mode}: run.{name}"
    with pytest.raises(ValueError, match="hidden by Run's own attributes"):
        book.presets.Run("x", "fast", 0, {"stream": 3})
