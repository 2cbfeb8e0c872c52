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

A claim that holds in most draws but not every one says so in words ("in 9 of 10 draws") and
declares it: ``rate=0.9`` means the sentence states that the condition holds in at least that
share of the draws (seeds) of its scale. Such a claim does not stop a run where it is false (a
draw may be one of the others); the claims sweep (``python -m booktools.sweep``, which runs every
chapter at many seeds) records how often it held and ``tests/test_sweep.py`` checks the share
against the rate. In the sweep's own runs (``RANKCOLLAPSE_SWEEP=1`` in the environment) no false
claim stops the run: each is recorded, and the run goes on to the next.

Testing the wiring: with ``RANKCOLLAPSE_BREAK_CLAIM=<chapter>.<name>`` in the environment the
named claim is treated as false, whatever the run measured, so a test can show that a false
claim fails the chapter with its name.
"""

from __future__ import annotations

import json
import math
import numbers as _numbers
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from .spans import Span, claim_spans, sentence_of

__all__ = [
    "SCALES",
    "BREAK_ENV",
    "SWEEP_ENV",
    "GLUE_PREFIX",
    "Claim",
    "ClaimFailed",
    "Span",
    "claim_spans",
    "sentence_of",
    "declare",
    "sweeping",
    "plain",
]

#: ``"any"``: checked in every run; ``"full"``: checked at the paper's scale (full mode) only.
SCALES = ("any", "full")
#: The environment variable that breaks one claim on purpose (``<chapter>.<name>``), for tests.
BREAK_ENV = "RANKCOLLAPSE_BREAK_CLAIM"
#: Set (to anything but ``0``) by the claims sweep (``booktools.sweep``): false claims are recorded
#: and the run goes on.
SWEEP_ENV = "RANKCOLLAPSE_SWEEP"
#: Glue key prefix of a claim's record.
GLUE_PREFIX = "claim."

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


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
    :func:`plain`); ``evidence`` the seeds, depths and inputs behind it; ``rate`` the share of
    draws the sentence says it holds in (``None``: every draw).
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
    rate: float | None = None

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
            "rate": self.rate,
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
    rate: float | None = None,
) -> Claim:
    """Check one claim and return its :class:`Claim`; raise :class:`ClaimFailed` when it is checked
    in this run (see :attr:`Claim.checked`) and false.

    ``name``: lower-case letters, digits and hyphens, unique in the chapter (``taken`` holds the
    names already declared); ``section``: the section number as an int or a string (``3`` or
    ``"4.2"``); ``condition`` and ``evidence``: non-empty text; ``sentence``: the prose's sentence
    for the record (default: read from the chapter's source, :func:`sentence_of`); ``holds``: the
    condition's value (a bool, or a one-element boolean array); ``numbers``: a dict of what
    decided it; ``scale``: one of :data:`SCALES`; ``rate``: ``None`` (the sentence speaks for every
    draw) or the share of draws it says the condition holds in, ``0 < rate < 1``: such a claim is
    recorded, never raised, when false (the sweep checks the share). With :data:`SWEEP_ENV` set,
    nothing raises: every claim is recorded.
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
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, _numbers.Real) or not 0 < rate < 1:
            raise ValueError(
                "rate must be None (every draw) or the share of draws the sentence says the "
                f"claim holds in, strictly between 0 and 1, got {rate!r}"
            )
        rate = float(rate)
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
        rate=rate,
    )
    if claim.holds or sweeping():
        return claim
    if broken or (claim.checked and rate is None):
        raise ClaimFailed(claim.failure())
    return claim


def sweeping() -> bool:
    """Whether this run is one of the claims sweep's (:data:`SWEEP_ENV`): false claims are
    recorded, not raised."""
    return os.environ.get(SWEEP_ENV, "").strip() not in ("", "0")
