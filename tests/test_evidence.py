"""Declared claims (book.evidence, book.ChapterRun.claim): a false claim stops the run naming
itself; each chapter's claim is a sentence its prose marks once ([sentence]{.claim #claim-NAME}),
in the section declared, and no code cell types it again.

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
            section=4,
            condition="min inside",
            holds=False,
            evidence="seed 0",
            scale="full",
        )


def test_a_claim_with_a_rate_is_recorded_not_raised_when_false():
    """A claim whose sentence states a rate (``rate=0.8``: in at least 80% of draws) does not stop
    a run where it is false: the record says so, and the sweep checks the share."""
    c = _run().claim("mostly", section=2, condition="c", holds=False, evidence="e", rate=0.8)
    assert c.checked and not c.holds and c.record()["rate"] == 0.8
    with pytest.raises(book.evidence.ClaimFailed):  # the same claim without a rate stops the run
        _run().claim("mostly", section=2, condition="c", holds=False, evidence="e")


@pytest.mark.parametrize("rate", [0, 1, 1.5, -0.1, True, "0.8", float("nan")])
def test_a_rate_outside_zero_to_one_is_refused(rate):
    with pytest.raises(ValueError, match="rate"):
        _run().claim("x", section=1, condition="c", holds=True, evidence="e", rate=rate)


def test_in_the_sweep_a_false_claim_is_recorded_and_the_run_goes_on(monkeypatch):
    monkeypatch.setenv(book.evidence.SWEEP_ENV, "1")
    run = _run()
    c = run.claim("falls", section=2, condition="c", holds=False, evidence="e")
    run.claim("next", section=2, condition="c", holds=True, evidence="e")
    assert not c.holds and [x.name for x in run.claims] == ["falls", "next"]
    monkeypatch.setenv(book.evidence.SWEEP_ENV, "0")  # "0" is off
    with pytest.raises(book.evidence.ClaimFailed):
        _run().claim("falls", section=2, condition="c", holds=False, evidence="e")


def test_breaking_a_claim_on_purpose(monkeypatch):
    monkeypatch.setenv(book.evidence.BREAK_ENV, "paths.ok")
    run = _run()
    run.claim("other", section=1, condition="c", holds=True, evidence="e")
    with pytest.raises(book.evidence.ClaimFailed, match="broken on purpose"):
        run.claim("ok", section=1, condition="c", holds=True, evidence="e")


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(name="Bad Name"), ValueError),
        (dict(condition=""), TypeError),
        (dict(holds=1), TypeError),
        (dict(holds=np.array([True, False])), TypeError),
        (dict(section=None), TypeError),
        (dict(scale="paper"), ValueError),
        (dict(numbers=[1, 2]), TypeError),
        (dict(evidence=""), TypeError),
    ],
)
def test_bad_declarations_are_refused(kwargs, error):
    args = dict(name="ok", section=1, condition="c", holds=True, evidence="e") | kwargs
    with pytest.raises(error):
        _run().claim(**args)


def test_a_name_twice_is_refused():
    run = _run()
    run.claim("ok", section=1, condition="c", holds=True, evidence="e")
    with pytest.raises(ValueError, match="twice"):
        run.claim("ok", section=1, condition="c", holds=True, evidence="e")


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
    """(line, name, section, positional arguments) of every ``run.claim(...)`` in a chapter's code
    cells."""
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
                name = _literal(node.args[0] if node.args else kw.get("name"))
                section = _literal(kw["section"]) if "section" in kw else None
                found.append((start + node.lineno, name, section, len(node.args)))
    return found


def _strings(src: str) -> list[str]:
    """Every string literal of a code cell (implicitly joined pieces as one), whitespace
    collapsed."""
    return [
        " ".join(node.value.split())
        for node in ast.walk(ast.parse(src))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


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
def test_every_claim_is_a_sentence_of_the_prose_written_once(path):
    """Issue 43, part 3: each declared claim (``run.claim("NAME", section=...)``) has exactly one
    span ``[sentence]{.claim #claim-NAME}`` in the prose of the section declared; every span has a
    declaration; no claim's text is typed in a code cell."""
    text = path.read_text()
    found = declarations(path)
    assert found, (
        f"{path.name} declares no claim (run.claim): its qualitative statements are unchecked"
    )
    names = [f[1] for f in found]
    assert len(set(names)) == len(names), f"{path.name}: a claim name is declared twice: {names}"
    spans = book.evidence.claim_spans(text)
    marked = {}
    for s in spans:
        marked.setdefault(s.name, []).append(s)
    for line, name, section, positional in found:
        where = f"{path.name}:{line} claim {name!r}"
        assert isinstance(name, str), f"{where}: the name must be a string literal"
        assert positional == 1, (
            f"{where}: run.claim takes the name only; the sentence is written in the prose"
        )
        assert str(section) == _section_at(text, line), (
            f"{where}: declared in section {_section_at(text, line)}, says section {section}"
        )
        got = marked.get(name, [])
        assert len(got) == 1, (
            f"{where}: the prose marks it {len(got)} times (lines "
            f"{[s.line for s in got]}); write [the sentence]{{.claim #claim-{name}}} once"
        )
        assert _section_at(text, got[0].line) == str(section), (
            f"{where}: its sentence (line {got[0].line}) is in section "
            f"{_section_at(text, got[0].line)}, the claim says section {section}"
        )
        assert got[0].sentence.strip(), f"{where}: its span is empty"
    undeclared = sorted(set(marked) - set(names))
    assert not undeclared, f"{path.name}: spans with no run.claim declaring them: {undeclared}"
    cells = [(start, " ".join(src.split()), _strings(src)) for start, src in _code_cells(text)]
    for s in spans:
        for start, src, strings in cells:
            assert s.sentence not in src and not any(s.sentence in t for t in strings), (
                f"{path.name}: the code cell at line {start} types claim {s.name!r}'s text "
                f"{s.sentence!r}; it is written once, in the prose"
            )


def test_the_source_reader_finds_declarations_and_spans(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "## 3. A section\n\nThe [residual falls\nfast with $[0, 1)$]{.claim #claim-falls}.\n\n"
        "```{code-cell} ipython3\n:tags: [remove-input]\n\n"
        'run.claim("falls", section=3, condition="c",\n'
        '          holds=True, evidence="e")\n```\n'
    )
    text = md.read_text()
    [(line, name, section, positional)] = declarations(md)
    assert (name, section, positional) == ("falls", 3, 1)
    assert _section_at(text, line) == "3"
    [span] = book.evidence.claim_spans(text)
    assert (span.name, span.sentence, span.line) == (
        "falls",
        "residual falls fast with $[0, 1)$",
        3,
    )
    assert text[span.start : span.end].startswith("[residual") and text[span.end - 1] == "}"


def test_the_code_cell_check_sees_a_sentence_typed_twice():
    """The check of the chapters' code cells reads implicitly joined string pieces as one."""
    src = 'x = ("the residual falls "\n     "fast")\nprint("other")'
    assert "the residual falls fast" in _strings(src)


@pytest.mark.parametrize(
    "text, error",
    [
        ("A [sentence]{#claim-x .claim}.", "must read"),
        ("A [sentence]{.claim}.", "must read"),
        ("A sentence]{.claim #claim-x}.", "has no"),
    ],
)
def test_a_misspelt_span_is_refused(text, error):
    with pytest.raises(ValueError, match=error):
        book.evidence.claim_spans(text)


def test_the_record_reads_its_sentence_from_the_chapter_source():
    """A declared claim's record carries the sentence its chapter's prose marks (the failure
    message quotes it); a chapter whose source is not at hand records none."""
    path = ROOT / "chapters" / "layernorm.md"
    span = book.evidence.claim_spans(path.read_text())[0]
    c = book.evidence.declare(
        "layernorm", "fast", 0, span.name, section=1, condition="c", holds=True, evidence="e"
    )
    assert c.sentence == span.sentence and c.record()["sentence"] == span.sentence
    lost = book.evidence.declare(
        "no-such-chapter",
        "fast",
        0,
        "x",
        section=1,
        condition="c",
        holds=False,
        evidence="e",
        scale="full",
    )
    assert lost.sentence is None and "source is not at hand" in lost.failure()


def test_a_sentence_given_to_run_claim_is_refused():
    with pytest.raises(TypeError, match="in the prose"):
        _run().claim("x", "the sentence", section=1, condition="c", holds=True, evidence="e")


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
        section=1,
        condition="true",
        holds=True,
        evidence="none",
    )
    assert DisplayFormatter().format(c) == ({}, {})  # what a kernel shows for a cell's last value
    assert "text/plain" in DisplayFormatter().format(c.record())[0]  # control: a dict is shown
