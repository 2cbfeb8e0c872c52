"""The closing table of the chapter "After the paper": one verdict per later result.

Each result module of :mod:`rankcollapse.later` returns, with its measurement, a :class:`Verdict`
built from what it measured; the chapter's closing section sets them side by side
(:func:`table`). The verdict's words are computed from the measurement, never typed in the chapter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Verdict", "AGREEMENT", "HEADER", "work_label", "table"]

# how a reproduction relates to the paper's claim
AGREEMENT = ("agrees", "partly", "disagrees", "not tested")


@dataclass(frozen=True)
class Verdict:
    """One later result as the book reproduced it.

    ``result``: the claim in the book's words; ``cite``: its key in ``references.bib``;
    ``assumes``: initialisation or trained, which architecture; ``measured``: what the book
    measured, with its numbers; ``agreement``: one of :data:`AGREEMENT`; ``untested``: what the
    reproduction did not test.
    """

    result: str
    cite: str
    assumes: str
    measured: str
    agreement: str
    untested: str = ""

    def __post_init__(self):
        for name in ("result", "cite", "assumes", "measured"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"Verdict: {name} must be a non-empty string, got {value!r}")
        if self.agreement not in AGREEMENT:
            raise ValueError(f"Verdict: agreement must be one of {AGREEMENT}, got {self.agreement!r}")


HEADER = ("result", "work", "assumes", "the book measured", "agreement", "not tested")


# works whose label is not "<First author> et al. <year>" (fewer than three authors); the tests
# check every key the result modules cite against references.bib
LABELS = {"giorlandino2025two": "Giorlandino and Goldt 2025"}


def work_label(cite: str) -> str:
    """A reader's label for a bibliography key of the book's form ``<author><year><word>``:
    ``"noci2022signal"`` -> ``"Noci et al. 2022"`` (or the label in :data:`LABELS`, for a work of
    one or two authors); any other key is returned as it is."""
    if not isinstance(cite, str):
        raise TypeError(f"cite must be a string (a key of references.bib), got {type(cite).__name__}")
    if cite in LABELS:
        return LABELS[cite]
    match = re.fullmatch(r"([a-z]+)(\d{4})[a-z]*", cite)
    if not match:
        return cite
    return f"{match.group(1).capitalize()} et al. {match.group(2)}"


def table(verdicts, names=None):
    """The chapter's closing table, a :class:`rankcollapse.book.Table` with one row per
    :class:`Verdict` (columns :data:`HEADER`), in the order given.

    ``names``: an optional mapping from a verdict's ``cite`` key to the label its "work" cell shows
    (default :func:`work_label`). Two verdicts with the same ``result`` are refused (a row twice).
    """
    from ..book import Table  # rc.later sits above the core and beside rc.book

    if isinstance(verdicts, Verdict) or not hasattr(verdicts, "__iter__"):
        raise TypeError(f"verdicts must be a list of Verdict, got {type(verdicts).__name__}")
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("verdicts must hold at least one Verdict")
    for i, v in enumerate(verdicts):
        if not isinstance(v, Verdict):
            raise TypeError(f"verdicts[{i}] must be a Verdict, got {type(v).__name__}")
    results = [v.result for v in verdicts]
    if len(set(results)) != len(results):
        raise ValueError("verdicts holds the same result twice")
    names = {} if names is None else dict(names)
    rows = [[v.result, names.get(v.cite, work_label(v.cite)), v.assumes, v.measured, v.agreement, v.untested or "none"]
            for v in verdicts]
    return Table(HEADER, rows, align="l" * len(HEADER))
