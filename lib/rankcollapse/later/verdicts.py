"""The closing table of the chapter "After the paper": one verdict per later result.

Each result module of :mod:`rankcollapse.later` returns, with its measurement, a :class:`Verdict`
built from what it measured; the chapter's closing section sets them side by side
(:func:`table`). The verdict's words are computed from the measurement, never typed in the chapter.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Verdict", "AGREEMENT"]

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
