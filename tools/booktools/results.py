"""Whose result is whose: the book's own results (:data:`BOOK_RESULTS`: what identifies each in
the prose, where it is proved), the paper's results as the book names them
(:data:`PAPER_RESULTS`), and the phrases that credit the paper, the reading note or the book.

Plain data (``re`` patterns as strings), read by :mod:`booktools.claims`, which checks that the
chapters credit each result right, and by ``booktools.ext.paperrefs``, which names a reference to a
box of the paper's results.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BookResult",
    "BOOK_RESULTS",
    "PAPER_RESULTS",
    "PAPER_RESULT_LABELS",
    "PAGE_TEXT_CREDITS",
    "PAPER_ATTRIBUTION",
    "NOTE_PHRASES",
    "NOTE_CREDIT",
    "UNSUPPORTED_ATTRIBUTIONS",
    "BOOK_TITLE",
    "SOURCE_TITLE",
]


@dataclass(frozen=True)
class BookResult:
    """One result the book derives itself.

    ``markers``: regular expressions (case-insensitive) any of which, found in a paragraph,
    means the paragraph speaks of this result; ``chapter`` and ``label``: the chapter file and
    the label of the box where the book states and proves it (``None`` for a method the book
    introduces in prose and code rather than in a box).
    """

    name: str
    markers: tuple[str, ...]
    chapter: str
    label: str | None
    summary: str


BOOK_RESULTS: tuple[BookResult, ...] = (
    BookResult(
        "gamma",
        (
            r"def-gamma",
            r"rc\.theory\.gamma\b",
            r"head-balance",
            r"\\nu\b",
            r"sinh",
            r"the book's \$?\\gamma",
            r"our \$?\\gamma",
        ),
        "chapters/collapse.md",
        "def-gamma",
        "an explicit gamma, derived from the one-layer proof, that the library computes",
    ),
    BookResult(
        "one-layer lemma, any centre",
        (
            r"lem-one-layer",
            r"\bthe lemma\b",
            r"\bany centre\b",
            r"\barbitrary centre\b",
            r"one-layer step",
        ),
        "chapters/collapse.md",
        "lem-one-layer",
        "one pure-attention layer shrinks the residual cubically, for any centre",
    ),
    BookResult(
        "collapse bound with a computable constant",
        (
            r"thm-collapse-book",
            r"layerwise",
            r"each layer's own constant",
            r"rc\.theory\.collapse_bound",
        ),
        "chapters/collapse.md",
        "thm-collapse-book",
        "the cascade of the lemma, with each layer's own constant or the largest",
    ),
    BookResult(
        "tracked residual",
        (r"tracked residual", r"rc\.theory\.tracked_residual"),
        "chapters/collapse.md",
        None,
        "the residual propagated below float64's rounding floor",
    ),
    BookResult(
        "MLP bound in one centre",
        (r"thm-mlp-book", r"optimal centre throughout"),
        "chapters/mlp.md",
        "thm-mlp-book",
        "the collapse bound with MLPs, the optimal centre from first layer to last",
    ),
    BookResult(
        "weight bound on lambda",
        (r"prop-weight-bound", r"\benvelope\b"),
        "chapters/mlp.md",
        "prop-weight-bound",
        "the MLP's Lipschitz constant bounded by the Jacobian envelope of its weights",
    ),
    BookResult(
        "families that keep the residual",
        (r"prop-preserving", r"reserved[- ]subspace", r"rc\.theory\.preserving_san"),
        "chapters/skip.md",
        "prop-preserving",
        "three families of skip networks whose residual never falls",
    ),
    BookResult(
        "upper bound with skips",
        (r"prop-skip-bound", r"rc\.theory\.skip_bound"),
        "chapters/skip.md",
        "prop-skip-bound",
        "the one-layer bound with skips, which can only grow with depth",
    ),
    BookResult(
        "LayerNorm as matrix products",
        (r"def-ln-factors", r"prop-ln-rank", r"exact form", r"S\^\{-1\}\s*P_h"),
        "chapters/layernorm.md",
        "def-ln-factors",
        "LayerNorm as a left scaling and right multiplications; the exact rewriting of LN(SA(X))",
    ),
    BookResult(
        "mean and optimal residual within a factor 2",
        (r"at most twice", r"between 1 and 2"),
        "chapters/collapse.md",
        None,
        "the mean-centred residual is at most twice the optimal one",
    ),
    BookResult(
        "path terms with LayerNorm frozen",
        (r"FrozenLayer",),
        "chapters/paths.md",
        None,
        "the factors of each path term when LayerNorm's scales are frozen",
    ),
    BookResult(
        "lower bound with skips",
        (
            r"thm-skip-lower",
            r"lem-skip-layer",
            r"lem-rows-close",
            r"prop-skip-rate",
            r"rc\.lower_bound",
            r"at most like \$?L\^\{-1/2\}",
        ),
        "chapters/lower_bound.md",
        "thm-skip-lower",
        (
            "with skips and value maps of row sums below 1/2, the residual falls at most like "
            "L^(-1/2); the rate is attained"
        ),
    ),
)

#: The boxes that state a result of the paper, and how a reference to each reads. The paper's
#: results are set apart from the book's numbered ones: their boxes are unnumbered
#: (``:nonumber:``; :func:`paper_box_problems`), so that the book's counter ("Theorem 2.1")
#: numbers the book's results only and a number such as "Theorem 2.2" names the paper's result
#: alone, always spelled "the paper's Theorem 2.2". A reference to one of these boxes is best
#: written with its text, ``{prf:ref}`the paper's Theorem 2.2 <thm-collapse-single>```; a bare
#: ``{prf:ref}`thm-collapse-single``` reads as the name below (``booktools.ext.paperrefs``).
PAPER_RESULTS = {
    "thm-paths": "the paper's path decomposition",
    "thm-collapse-single": "the paper's Theorem 2.2",
    "thm-collapse-multi": "the paper's multi-head bound",
    "thm-mlp-bound": "the paper's bound with MLPs",
}

#: Labels of the boxes that state a result of the paper: a reference to one credits the paper.
PAPER_RESULT_LABELS = tuple(PAPER_RESULTS)

#: What credits the paper with a statement.
PAPER_ATTRIBUTION = (
    (
        r"\bthe paper's "
        r"(theorems?|lemmas?|corollar(y|ies)|propositions?|sections?|results?|conclusion|words|bound)\b"
    ),
    r"\bthe paper (states|shows|calls|proves|derives|reads|writes|says)\b",
    r"\{prf:ref\}`([^`<]*<)?(" + "|".join(PAPER_RESULT_LABELS) + r")>?`",
)

#: Text that credits the paper in a label, legend or note the book's code writes into a page
#: (:func:`page_text_credits`): "the paper's Theorem 2.2", "paper's theorem", "(as stated)".
PAGE_TEXT_CREDITS = (
    r"\bpaper(?:'|\u2019|&#x27;|&#39;)s\s+(theorems?|lemmas?|propositions?|corollar(y|ies)|bound)\b",
    r"\(as stated\)",
)

#: The reading note's own phrases: never the paper's words.
NOTE_PHRASES = (
    r"cannot help",
    r"fills? (the path set )?with short paths",
    r"long paths have (lost|had) their residual",
    r"a price the source names",
)

#: Crediting the note (then a note phrase may sit beside the paper's name).
NOTE_CREDIT = r"\b(the )?(reading )?note('s)?\b"

#: Claims about the paper that no source the book could read supports.
UNSUPPORTED_ATTRIBUTIONS = (
    (
        r"\b(its|the paper's) appendix (measures|shows|plots)",
        "where in the paper this is was not checked: attribute it to the official code, or drop it",
    ),
    (
        r"\bthe paper does not weigh\b",
        (
            "the reading note records that the paper names the price; whether it weighs it was not "
            "checked"
        ),
    ),
    (
        r"\b(?:nor|neither) (?:does )?the paper (?:weighs?|frames?|sets?)\b"
        r"|\bthe paper (?:does not|doesn't|never|nowhere) (?:weighs?|frames?|sets?)\b"
        r"|\bthe paper (?:weighs|frames|sets) (?:it|this|that|the price|the trade)\b",
        "how the paper weighs or frames the price against other accounts was not checked; the "
        "reading "
        'note is the one that frames it ("pulls against ... neither frames it as a trade"): '
        "credit the note",
    ),
)

#: A title that labels a unit as the book's own (setting it beside the paper's is then allowed).
BOOK_TITLE = r"\(this book|this book's refinement"

#: A box title that says whose the statement is.
SOURCE_TITLE = r"the paper's|\(this book|the reading note"
