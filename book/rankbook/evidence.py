"""Declared claims: a sentence of a chapter's prose and the condition on the run's numbers that
makes it true.

A qualitative statement about a result ("falls", "U-shaped", "agrees", "no single path carries
the task") is only as good as the run behind it. A chapter therefore *declares* each such
statement: the prose marks the sentence where the reader reads it, as a MyST span (myst-parser's
``attrs_inline``) whose id names the claim::

    ... so [short paths together carry sorting and memorization]{.claim #claim-short-paths-carry},
    as the figure shows.

and a code cell beside the numbers that decide it names the claim and decides it::

    run.claim(
        "short-paths-carry", section=3,
        condition="the paths up to length 3 reach 95% of the full model, every seed",
        holds=bool((enough <= 3).all()),
        numbers={"shortest sufficient length, per seed": enough},
        evidence="3 seeds; the same 256 evaluation tokens on both sides")

The sentence is written once, in the prose (``tests/test_evidence.py`` checks that every declared
claim has exactly one span, in the section declared, and that no claim's text is typed in a code
cell). The record takes the sentence from the chapter's source (:func:`sentence_of`) where the
source is at hand (the book, the tests), for the failure message; run elsewhere (Colab) it is
``None``. ``run`` is the chapter's run (:func:`rankbook.page.start`). When the condition is false
the run stops with :class:`ClaimFailed`, naming the claim, its condition and its numbers: the
chapter, the book build and the tests fail. A claim that holds only at the paper's scale is
declared ``scale="full"``: it is checked in full mode only, and a fast run says so on the page,
with whether it happened to hold.

This module is pure bookkeeping (no plotting, no glue): :class:`rankbook.page.ChapterRun`
calls :func:`declare`, then glues the record (``claim.<name>``, read by the status page's table
of claims, ``tools/booktools/ext/claimtable.py``) and shows the fast-mode note.

Testing the wiring: with ``RANKCOLLAPSE_BREAK_CLAIM=<chapter>.<name>`` in the environment the
named claim is treated as false, whatever the run measured, so a test can show that a false
claim fails the chapter with its name.
"""

from __future__ import annotations

import json
import math
import numbers as _numbers
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

__all__ = [
    "SCALES",
    "BREAK_ENV",
    "GLUE_PREFIX",
    "Claim",
    "ClaimFailed",
    "Span",
    "claim_spans",
    "sentence_of",
    "declare",
    "plain",
]

#: ``"any"``: checked in every run; ``"full"``: checked at the paper's scale (full mode) only.
SCALES = ("any", "full")
#: The environment variable that breaks one claim on purpose (``<chapter>.<name>``), for tests.
BREAK_ENV = "RANKCOLLAPSE_BREAK_CLAIM"
#: Glue key prefix of a claim's record.
GLUE_PREFIX = "claim."

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
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


class ClaimFailed(AssertionError):
    """A declared claim whose condition is false in this run."""


def plain(value):
    """``value`` as JSON-able Python: numbers, strings, bools, ``None``, and lists or dicts of them.

    numpy and torch scalars and arrays become floats, ints, bools or (nested) lists; NaN and
    infinities become the strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such numbers).
    """
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()] if value.ndim else plain(value.item())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, _numbers.Integral):
        return int(value)
    if isinstance(value, _numbers.Real):
        x = float(value)
        return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    raise TypeError(
        "a claim's numbers must be numbers, strings, arrays or lists of them, got "
        f"{type(value).__name__}"
    )


def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty string, got {type(value).__name__} {value!r}")
    return " ".join(value.split())


def _truth(value) -> bool:
    """One truth value: a bool, a numpy bool or a one-element array/tensor of them."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.size != 1 or value.dtype != np.bool_:
            raise TypeError(
                f"holds must be one truth value, got an array of shape {value.shape} and dtype "
                f"{value.dtype}"
                " (use .all() or .any() to say which)"
            )
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(
        "holds must be True or False (the condition computed from the run), got "
        f"{type(value).__name__} {value!r}"
    )


@dataclass(frozen=True)
class Claim:
    """One declared claim and what this run found.

    ``chapter`` and ``name`` identify it (``"<chapter>.<name>"``); ``section`` is the chapter's
    section that states it; ``sentence`` the statement as the prose marks it (its MyST source,
    :func:`sentence_of`; ``None`` where the chapter's source is not at hand); ``condition`` the
    condition in words; ``holds`` whether the condition is true in this run; ``scale`` one of
    :data:`SCALES`; ``mode`` and ``seed`` the run's; ``numbers`` what decided it (JSON-able, see
    :func:`plain`); ``evidence`` the seeds, depths and inputs behind it.
    """

    chapter: str
    name: str
    section: str
    sentence: str | None
    condition: str
    holds: bool
    scale: str
    mode: str
    seed: int
    numbers: dict = field(default_factory=dict)
    evidence: str = ""
    broken: bool = False

    @property
    def id(self) -> str:
        return f"{self.chapter}.{self.name}"

    @property
    def checked(self) -> bool:
        """Whether this run checks the claim: always for ``scale="any"``, in full mode for
        ``"full"``."""
        return self.scale == "any" or self.mode == "full"

    def record(self) -> dict:
        """The claim as a JSON-able dict (what the chapter glues for the status page)."""
        return {
            "chapter": self.chapter,
            "name": self.name,
            "section": self.section,
            "sentence": self.sentence,
            "condition": self.condition,
            "holds": self.holds,
            "checked": self.checked,
            "scale": self.scale,
            "mode": self.mode,
            "seed": self.seed,
            "numbers": self.numbers,
            "evidence": self.evidence,
        }

    def json(self) -> str:
        return json.dumps(self.record(), sort_keys=True)

    def _ipython_display_(self):
        """A claim cell shows nothing (its sentence is in the prose; a fast run's note about a
        full-mode claim is displayed by :meth:`rankbook.page.ChapterRun.claim` itself)."""

    def failure(self) -> str:
        """The message of :class:`ClaimFailed`: the claim, its condition and the numbers."""
        why = f" (broken on purpose: {BREAK_ENV}={self.id})" if self.broken else ""
        nums = "; ".join(f"{k} = {v}" for k, v in self.numbers.items()) or "none given"
        sentence = self.sentence or "(the chapter's source is not at hand)"
        return (
            f"claim {self.id!r} (section {self.section}) does not hold in this run "
            f"(mode {self.mode}, seed {self.seed}){why}.\n  sentence: {sentence}\n"
            f"  condition: {self.condition}\n  numbers: {nums}"
        )


def declare(
    chapter: str,
    mode: str,
    seed: int,
    name: str,
    *,
    section,
    condition: str,
    holds,
    numbers: dict | None = None,
    evidence: str,
    scale: str = "any",
    taken=(),
    sentence: str | None = None,
) -> Claim:
    """Check one claim and return its :class:`Claim`; raise :class:`ClaimFailed` when it is checked
    in this run (see :attr:`Claim.checked`) and false.

    ``name``: lower-case letters, digits and hyphens, unique in the chapter (``taken`` holds the
    names already declared); ``section``: the section number as an int or a string (``3`` or
    ``"4.2"``); ``condition`` and ``evidence``: non-empty text; ``sentence``: the prose's sentence
    for the record (default: read from the chapter's source, :func:`sentence_of`); ``holds``: the
    condition's value (a bool, or a one-element boolean array); ``numbers``: a dict of what
    decided it; ``scale``: one of :data:`SCALES`.
    """
    name = _text("name", name)
    if set(name) - _NAME_CHARS or name.startswith("-"):
        raise ValueError(f"name must be lower-case letters, digits and hyphens, got {name!r}")
    if name in taken:
        raise ValueError(f"claim {chapter}.{name} is declared twice in this run")
    if isinstance(section, bool) or not isinstance(section, (int, str)) or not str(section).strip():
        raise TypeError(
            "section must be the section's number (an int or a string such as '4.2'), got "
            f"{section!r}"
        )
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if numbers is not None and not isinstance(numbers, dict):
        raise TypeError(f"numbers must be a dict (name -> value), got {type(numbers).__name__}")
    truth = _truth(holds)
    broken = os.environ.get(BREAK_ENV, "").strip() == f"{chapter}.{name}"
    claim = Claim(
        chapter=chapter,
        name=name,
        section=str(section).strip(),
        sentence=sentence_of(chapter, name) if sentence is None else _text("sentence", sentence),
        condition=_text("condition", condition),
        holds=truth and not broken,
        scale=scale,
        mode=mode,
        seed=int(seed),
        numbers=plain(numbers or {}),
        evidence=_text("evidence", evidence),
        broken=broken,
    )
    if not claim.holds and (claim.checked or broken):
        raise ClaimFailed(claim.failure())
    return claim
