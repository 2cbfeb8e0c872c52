import pytest

import rankcollapse as rc
from chapters_util import toc_notebooks


def test_every_chapter_has_both_modes():
    for chapter, modes in rc.presets.PRESETS.items():
        assert set(modes) == {"fast", "full"}, chapter
        assert set(modes["fast"]) == set(modes["full"]), f"{chapter}: fast and full must set the same sizes"


def test_every_toc_chapter_uses_a_preset_and_a_parameters_cell():
    for path in toc_notebooks():
        text = path.read_text()
        assert ":tags: [parameters]" in text, path.name
        assert 'mode = "full"' in text and "seed = 0" in text, path.name
        assert "rc.presets.get(" in text, path.name


def test_get_and_attributes(monkeypatch):
    monkeypatch.delenv(rc.presets.ENV_VAR, raising=False)
    run = rc.presets.get("paths", "fast", 3)
    assert run.mode == "fast" and run.seed == 3 and run.L == rc.presets.PRESETS["paths"]["fast"]["L"]
    with pytest.raises(AttributeError, match="no size"):
        run.nonexistent


def test_bad_mode_chapter_seed(monkeypatch):
    monkeypatch.delenv(rc.presets.ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="mode"):
        rc.presets.get("paths", "medium")
    with pytest.raises(ValueError, match="chapter"):
        rc.presets.get("no-such-chapter", "fast")
    with pytest.raises(ValueError, match="seed"):
        rc.presets.get("paths", "fast", -1)


def test_environment_override_is_announced(monkeypatch, capsys):
    monkeypatch.setenv(rc.presets.ENV_VAR, "fast")
    assert rc.presets.get("paths", "full").mode == "fast"
    assert "overrides" in capsys.readouterr().out
    monkeypatch.setenv(rc.presets.ENV_VAR, "turbo")
    with pytest.raises(ValueError, match=rc.presets.ENV_VAR):
        rc.presets.get("paths", "full")


def test_repr_names_every_size_and_fits_an_output_box():
    from rankcollapse import presets

    for chapter in presets.PRESETS:
        for mode in ("fast", "full"):
            run = presets.get(chapter, mode, 3)
            text = repr(run)
            assert text.startswith(f"Run({chapter!r}, mode={mode!r}, seed=3:")
            assert all(len(line) <= 80 for line in text.splitlines()), text
            flat = " ".join(text.split())  # the wrapped lines joined again
            for key, value in run._sizes.items():
                assert f"{key}={value}" in flat, (key, text)
