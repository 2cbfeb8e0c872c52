"""Declared claims (book.evidence, book.ChapterRun.claim): a false claim stops the run naming
itself; the chapters' claims are fixed sentences their prose states, in the section declared.

The end-to-end check (a claim broken on purpose fails a real chapter with its name) executes the
layernorm chapter once in fast mode with RANKCOLLAPSE_BREAK_CLAIM set.
"""

import ast
import json
import re

import numpy as np
import pytest
import torch

import rankbook as book
from booktools import ROOT
from booktools.toc import toc_notebooks

CHAPTERS = toc_notebooks()


def _run(mode="fast"):
    return book.ChapterRun("paths", mode, 0, {})


def test_a_true_claim_is_recorded():
    run = _run()
    c = run.claim(
        "falls",
        "the residual falls",
        section=2,
        condition="last < first",
        holds=np.bool_(True),
        numbers={"first": np.float64(1.0), "last": torch.tensor(0.5)},
        evidence="seed 0",
    )
    assert c.holds and c.checked and c.id == "paths.falls"
    assert run.claims == [c]
    assert json.loads(c.json())["numbers"] == {"first": 1.0, "last": 0.5}


def test_a_false_claim_fails_naming_itself_and_its_numbers():
    run = _run()
    with pytest.raises(book.evidence.ClaimFailed) as e:
        run.claim(
            "falls",
            "the residual falls",
            section=2,
            condition="last < first",
            holds=False,
            numbers={"first": 1.0, "last": 2.0},
            evidence="seed 0",
        )
    msg = str(e.value)
    assert (
        "'paths.falls'" in msg
        and "last < first" in msg
        and "last = 2.0" in msg
        and "section 2" in msg
    )


def test_a_full_scale_claim_is_not_checked_in_fast_mode_and_says_so(capsys):
    c = _run("fast").claim(
        "u",
        "U-shaped",
        section=4,
        condition="min inside",
        holds=False,
        evidence="seed 0",
        scale="full",
    )
    assert not c.checked and not c.holds
    assert "checked at the paper's scale (full mode) only" in capsys.readouterr().out
    with pytest.raises(book.evidence.ClaimFailed):
        _run("full").claim(
            "u",
            "U-shaped",
            section=4,
            condition="min inside",
            holds=False,
            evidence="seed 0",
            scale="full",
        )


def test_breaking_a_claim_on_purpose(monkeypatch):
    monkeypatch.setenv(book.evidence.BREAK_ENV, "paths.ok")
    run = _run()
    run.claim("other", "x", section=1, condition="c", holds=True, evidence="e")
    with pytest.raises(book.evidence.ClaimFailed, match="broken on purpose"):
        run.claim("ok", "x", section=1, condition="c", holds=True, evidence="e")


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(name="Bad Name"), ValueError),
        (dict(sentence=""), TypeError),
        (dict(holds=1), TypeError),
        (dict(holds=np.array([True, False])), TypeError),
        (dict(section=None), TypeError),
        (dict(scale="paper"), ValueError),
        (dict(numbers=[1, 2]), TypeError),
        (dict(evidence=""), TypeError),
    ],
)
def test_bad_declarations_are_refused(kwargs, error):
    args = (
        dict(name="ok", sentence="x", section=1, condition="c", holds=True, evidence="e") | kwargs
    )
    with pytest.raises(error):
        _run().claim(**args)


def test_a_name_twice_is_refused():
    run = _run()
    run.claim("ok", "x", section=1, condition="c", holds=True, evidence="e")
    with pytest.raises(ValueError, match="twice"):
        run.claim("ok", "y", section=1, condition="c", holds=True, evidence="e")


# ---- the chapters' declarations, read from their sources


def _code_cells(text: str):
    """(first line number, source) of each code cell of a MyST chapter."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^```\{code-cell\}", lines[i]):
            j = i + 1
            while lines[j].startswith(":"):
                j += 1
            k = j
            while lines[k].strip() != "```":
                k += 1
            yield j, "\n".join(lines[j:k])
            i = k
        i += 1


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def declarations(path):
    """(line, name, sentence, section) of every ``run.claim(...)`` in a chapter's code cells."""
    text = path.read_text()
    found = []
    for start, src in _code_cells(text):
        for node in ast.walk(ast.parse(src)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "claim"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "run"
            ):
                kw = {k.arg: k.value for k in node.keywords}
                args = list(node.args) + [None, None]
                name = _literal(args[0] or kw.get("name"))
                sentence = _literal(args[1] or kw.get("sentence"))
                section = _literal(kw["section"]) if "section" in kw else None
                found.append((start + node.lineno, name, sentence, section))
    return found


def _prose(text: str) -> str:
    """The chapter's text outside code cells, whitespace collapsed."""
    out, fence = [], None
    for line in text.splitlines():
        if fence is None and re.match(r"^```\{code-cell\}", line):
            fence = "```"
            continue
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        out.append(line)
    return " ".join(" ".join(out).split())


def _section_at(text: str, line: int) -> str | None:
    section = None
    for i, l in enumerate(text.splitlines(), start=1):
        if i > line:
            break
        m = re.match(r"^## (\d+(?:\.\d+)?)\.?\s", l)
        if m:
            section = m.group(1)
    return section


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_declares_its_claims_as_fixed_sentences_of_its_prose(path):
    text = path.read_text()
    found = declarations(path)
    assert found, (
        f"{path.name} declares no claim (run.claim): its qualitative statements are unchecked"
    )
    prose = _prose(text)
    names = [f[1] for f in found]
    assert len(set(names)) == len(names), f"{path.name}: a claim name is declared twice: {names}"
    for line, name, sentence, section in found:
        where = f"{path.name}:{line} claim {name!r}"
        assert isinstance(name, str), f"{where}: the name must be a string literal"
        assert isinstance(sentence, str), (
            f"{where}: the sentence must be fixed text (a string literal)"
        )
        assert " ".join(sentence.split()) in prose, (
            f"{where}: the prose does not state the sentence {sentence!r}"
        )
        assert str(section) == _section_at(text, line), (
            f"{where}: declared in section {_section_at(text, line)}, says section {section}"
        )


def test_the_source_reader_finds_declarations(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "## 3. A section\n\nThe residual falls fast.\n\n```{code-cell} ipython3\n:tags: "
        "[remove-input]\n\n"
        'run.claim("falls", "The residual falls", section=3, condition="c",\n'
        '          holds=True, evidence="e")\n```\n'
    )
    [(line, name, sentence, section)] = declarations(md)
    assert (name, sentence, section) == ("falls", "The residual falls", 3)
    assert _section_at(md.read_text(), line) == "3"


@pytest.mark.chapters
def test_a_claim_broken_on_purpose_fails_its_chapter_with_its_name(tmp_path, monkeypatch):
    """A real chapter, executed with one of its claims broken (RANKCOLLAPSE_BREAK_CLAIM): the run
    stops at that claim, and the error names it. The layernorm chapter is the quickest to run."""
    import papermill

    from booktools.execute import execute

    path = ROOT / "chapters" / "layernorm.md"
    name = declarations(path)[-1][1]  # the last claim: every cell before it must have run
    monkeypatch.setenv(book.evidence.BREAK_ENV, f"layernorm.{name}")
    with pytest.raises(papermill.PapermillExecutionError) as e:
        execute(path, mode="fast", out_dir=tmp_path)
    assert e.value.ename == "ClaimFailed"
    assert f"'layernorm.{name}'" in e.value.evalue and "broken on purpose" in e.value.evalue


def test_a_claim_cell_shows_no_claim_object():
    """A cell ending in ``run.claim(...)`` shows nothing on the page (its sentence is in the
    prose)."""
    from IPython.core.formatters import DisplayFormatter

    c = book.evidence.declare(
        "paths",
        "fast",
        0,
        "shows-nothing",
        "It shows nothing.",
        section=1,
        condition="true",
        holds=True,
        evidence="none",
    )
    assert DisplayFormatter().format(c) == ({}, {})  # what a kernel shows for a cell's last value
    assert "text/plain" in DisplayFormatter().format(c.record())[0]  # control: a dict is shown
