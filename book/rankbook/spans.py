"""Where a chapter's prose states its claims: the spans ``[sentence]{.claim #claim-NAME}``.

A declared claim's sentence is written once, in the prose, marked as a MyST span (myst-parser's
``attrs_inline``) whose id names the claim; :func:`claim_spans` finds the spans in a chapter's
source and :func:`sentence_of` gives a claim's sentence for its record
(:func:`rankbook.evidence.declare`). Pure text handling: ``re`` and ``pathlib``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["SPAN_END", "Span", "claim_spans", "sentence_of"]

#: How the prose marks a claim's sentence: ``[sentence]{.claim #claim-NAME}``; the closing part.
SPAN_END = re.compile(r"\]\{\.claim #claim-([a-z0-9][a-z0-9-]*)\}")
#: Any attribute block that mentions a claim (a marking not of the form above is refused).
ANY_CLAIM_ATTRS = re.compile(r"\{[^{}\n]*(\.claim\b|#claim-)[^{}\n]*\}")


@dataclass(frozen=True)
class Span:
    """A claim's sentence as the prose marks it: ``name``, the sentence's MyST source with its
    whitespace collapsed (roles such as ``{glue}`x``` and ``$math$`` as written), and where it
    is: ``line`` (1-based, of the opening bracket), ``start``/``end`` (offsets of the opening
    ``[`` and just past the closing ``}``)."""

    name: str
    sentence: str
    line: int
    start: int
    end: int


def _prose_mask(text: str) -> list[bool]:
    """Per line of ``text``: whether it is prose (outside ```` ```{code-cell} ```` cells)."""
    out, cell = [], False
    for line in text.splitlines():
        if not cell and re.match(r"^```\{code-cell\}", line):
            cell = True
            out.append(False)
        elif cell:
            cell = line.strip() != "```"
            out.append(False)
        else:
            out.append(True)
    return out


def claim_spans(text: str) -> list[Span]:
    """Every claim span ``[sentence]{.claim #claim-NAME}`` in the prose of a MyST chapter, in
    order of their closing brackets (an inner span before the one around it).

    Brackets are matched as MyST does: those inside inline code (backticks) and inline math
    (``$...$``) do not count, and a span does not cross a blank line. A claim attribute block
    written otherwise (``{#claim-x .claim}``, a missing ``.claim``) or a span without its
    opening bracket raises ``ValueError`` naming the line.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a chapter's source (str), got {type(text).__name__}")
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    spans = []
    # paragraphs: runs of non-blank prose lines (a span does not cross a blank line)
    para: list[int] = []
    for i, (line, prose) in enumerate([*zip(lines, _prose_mask(text)), ("", False)]):
        if prose and line.strip():
            para.append(i)
            continue
        if para:
            spans.extend(_paragraph_spans(text, offsets[para[0]], offsets[para[-1] + 1]))
        para = []
    return sorted(spans, key=lambda s: s.end)


def _paragraph_spans(text: str, begin: int, stop: int) -> list[Span]:
    block = text[begin:stop]
    for bad in ANY_CLAIM_ATTRS.finditer(block):
        if bad.start() == 0 or not SPAN_END.match(block, bad.start() - 1):
            line = text.count("\n", 0, begin + bad.start()) + 1
            raise ValueError(
                f"line {line}: claim attributes must read ']{{.claim #claim-NAME}}' right "
                f"after the sentence, got {bad.group(0)!r}"
            )
    spans, stack, i = [], [], 0
    while i < len(block):
        ch = block[i]
        if ch == "`":  # inline code or a role's content: to the closing run of as many backticks
            run = len(block[i:]) - len(block[i:].lstrip("`"))
            close = block.find("`" * run, i + run)
            i = len(block) if close < 0 else close + run
            continue
        if ch == "$":  # inline math ($...$ or $$...$$): to its closing dollars
            run = 2 if block.startswith("$$", i) else 1
            close = block.find("$" * run, i + run)
            if close > 0:
                i = close + run
                continue
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            m = SPAN_END.match(block, i)
            opened = stack.pop() if stack else None
            if m:
                line = text.count("\n", 0, begin + (i if opened is None else opened)) + 1
                if opened is None:
                    raise ValueError(f"line {line}: claim span {m.group(1)!r} has no '['")
                drop = set()  # a span nested in this one: its marks are not the sentence's
                for n in spans:
                    if n.start > begin + opened:
                        close = n.end - begin - len(f"]{{.claim #claim-{n.name}}}")
                        drop |= {n.start - begin, *range(close, n.end - begin)}
                inner = "".join(block[k] for k in range(opened + 1, i) if k not in drop)
                inner = " ".join(inner.split())
                spans.append(Span(m.group(1), inner, line, begin + opened, begin + m.end()))
                i = m.end()
                continue
        i += 1
    return spans


@lru_cache(maxsize=32)
def _spans_of(path: str, mtime: float) -> dict:
    return {s.name: s.sentence for s in claim_spans(Path(path).read_text())}


def _source(chapter: str) -> Path | None:
    """The chapter's MyST source, where it is at hand: the repository's ``chapters/`` (the library
    installed editable from it, as in the book and its tests), or the working folder (a chapter
    run from its own folder)."""
    here = Path(__file__).resolve().parents[2] / "chapters" / f"{chapter}.md"
    for path in (here, Path.cwd() / f"{chapter}.md"):
        if path.is_file():
            return path
    return None


def sentence_of(chapter: str, name: str) -> str | None:
    """The sentence the chapter's prose marks for claim ``name`` (:func:`claim_spans`), or
    ``None`` where the chapter's source is not at hand (a notebook run on Colab) or marks none."""
    path = _source(chapter)
    if path is None:
        return None
    try:
        return _spans_of(str(path), path.stat().st_mtime).get(name)
    except (OSError, ValueError):
        return None
