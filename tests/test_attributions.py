"""Whose result is whose: no page credits the paper with what the book derived (issue 13).

Every page of _toc.yml is read with ``booktools.claims``: a paragraph, list item or box that credits
the paper ("the paper's Theorem", "the paper states/shows/calls/proves", a reference to a box that
states a paper's result) may not name one of the book's own results (``results.BOOK_RESULTS``),
except inside a box titled as the book's; the note's phrases are never the paper's; and every
theorem, lemma, proposition or definition box says in its title whose it is. The checker itself
is tested on the defects the unfixed chapters had, so it cannot pass by checking nothing.
"""

import re

import pytest

import rankbook as book
from booktools import ROOT, claims, results
from booktools.toc import toc_files

PAGES = [ROOT / (f if f.endswith(".md") else f + ".md") for f in toc_files()]
PAGES = [p for p in PAGES if p.exists()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_credits_every_result_to_its_source(page):
    problems = claims.check_file(page)
    assert not problems, "\n".join(problems)


def test_every_page_was_read():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"intro.md", "notation.md", "status.md", "chapters/collapse.md"} <= names, names
    # a page with boxes yields box units: the reader does see them
    kinds = {u.kind for u in claims.units((ROOT / "chapters/collapse.md").read_text())}
    assert {
        "prf:theorem",
        "prf:lemma",
        "prf:definition",
        "prf:proof",
        "admonition",
        "prose",
    } <= kinds


@pytest.mark.parametrize("result", results.BOOK_RESULTS, ids=lambda r: r.name)
def test_book_results_are_where_the_list_says(result):
    text = (ROOT / result.chapter).read_text()
    assert any(re.search(m, text, flags=re.IGNORECASE) for m in result.markers), (
        f"none of the markers of {result.name!r} occurs in {result.chapter}: the list is stale"
    )
    if result.label is None:
        return
    boxes = [u for u in claims.units(text) if f":label: {result.label}" in u.text]
    assert len(boxes) == 1, f"{result.chapter} has no box labelled {result.label}"
    assert "(this book" in boxes[0].title, (
        f"{result.label} is the book's own result, so its box title must say '(this book)': "
        f"{boxes[0].title!r}"
    )


def test_paper_result_labels_are_unnumbered_boxes_titled_as_the_papers():
    """Each of the paper's results is a box of its own style: titled as the paper's, unnumbered
    (so that the book's counter names only the book's results), framed as the paper's."""
    found = {}
    for page in PAGES:
        for u in claims.units(page.read_text()):
            for label in results.PAPER_RESULT_LABELS:
                if f":label: {label}\n" in u.text + "\n":
                    found[label] = u
    assert set(found) == set(results.PAPER_RESULT_LABELS), found
    for label, u in found.items():
        assert "the paper's" in u.title.lower(), (label, u.title)
        assert re.search(r"^:nonumber:\s*$", u.text, flags=re.MULTILINE), (label, "not :nonumber:")
        assert results.PAPER_RESULTS[label].startswith("the paper's"), label


def test_the_paper_results_numbers_name_one_result_each():
    """ "Theorem 2.2" is the paper's (its title says so); the book numbers only its own theorems,
    so no theorem box of the book's collapse chapter is numbered 2.2 or 2.3: the chapter has a
    single numbered theorem, Theorem 2.1, the book's."""
    text = (ROOT / "chapters/collapse.md").read_text()
    numbered = [
        u
        for u in claims.units(text)
        if u.kind == "prf:theorem" and not re.search(r"^:nonumber:", u.text, flags=re.MULTILINE)
    ]
    assert [u.title for u in numbered] == [
        "The collapse bound with a computable constant (this book)"
    ]
    assert "Theorem 2.2" in results.PAPER_RESULTS["thm-collapse-single"]


def test_a_numbered_box_of_the_papers_is_caught():
    box = (
        "````{prf:theorem} Pure attention collapses (the paper's Theorem 2.2)\n"
        ":label: x\n\nbody\n````\n"
    )
    assert claims.paper_box_problems(box)
    fixed = box.replace(":label: x\n", ":label: x\n:nonumber:\n")
    assert not claims.paper_box_problems(fixed)
    own = box.replace(
        "(the paper's Theorem 2.2)", "(this book; the form of the paper's Theorem 2.2)"
    )
    assert not claims.paper_box_problems(own)
    mixed = box.replace(
        "(the paper's Theorem 2.2)", "(the paper's argument; this statement and proof: this book)"
    )
    assert not claims.paper_box_problems(mixed)  # the statement is the book's: the book numbers it
    definition = box.replace("prf:theorem", "prf:definition")
    assert not claims.paper_box_problems(definition)  # definitions carry no paper number


def test_the_library_writes_no_credit_to_the_paper_into_a_page():
    """What the book layer writes into a page (the explorer's legend and notes) is read like the
    chapters: what it draws is the book's computation."""
    grid = book.explorer.skip_strength_grid(
        L=2, scales=(1.0,), strengths=(0.0, 1.0), n=4, d=4, H=1, samples=1, seed=0
    )
    html = book.explorer.explorer_html(grid)
    assert not claims.page_text_credits(html)
    for key, text in book.explorer.TEXT.items():
        assert not claims.page_text_credits(text), (key, text)
    assert "book" in book.explorer.TEXT["bound"]  # the bound is labelled the book's
    # the labels the explorer wrote before issue 26 are caught
    assert claims.page_text_credits("bound (paper\u2019s Theorem 2.2)")
    assert claims.page_text_credits("Dashed: the bound of the paper's theorem (as stated)")


def test_a_bare_reference_to_a_papers_result_reads_by_name(tmp_path):
    """booktools.ext.paperrefs: sphinx-proof renders a bare reference to an unnumbered box as
    'Theorem '; the book's extension gives it the name results.PAPER_RESULTS lists, and leaves a
    reference with its own text as written."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "extensions = ['myst_parser', 'sphinx_proof', 'booktools.ext.paperrefs']\n"
        "myst_enable_extensions = ['dollarmath']\n"
    )
    (src / "index.md").write_text(
        "# Page\n\n````{prf:theorem} The paper's Theorem 2.2, as the reading note gives it\n"
        ":label: thm-collapse-single\n:nonumber:\n\nA bound.\n````\n\n"
        "```{prf:theorem} A bound (this book)\n:label: thm-book\n\nOurs.\n```\n\n"
        "Bare: {prf:ref}`thm-collapse-single`. {prf:ref}`thm-collapse-single` again.\n"
        "With text: {prf:ref}`its bound <thm-collapse-single>`. Ours: {prf:ref}`thm-book`.\n"
    )
    app = Sphinx(
        str(src),
        str(src),
        str(tmp_path / "out"),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=None,
        freshenv=True,
    )
    app.build()
    html = (tmp_path / "out" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", html)
    assert "Bare: the paper\u2019s Theorem 2.2." in text or "Bare: the paper's Theorem 2.2." in text
    assert "The paper's Theorem 2.2 again" in text or "The paper\u2019s Theorem 2.2 again" in text
    assert "With text: its bound." in text
    assert "Ours: Theorem 1." in text  # the book's own result keeps the book's counter


# ---- the checker catches the defects issue 13 lists (text of the unfixed chapters)

DEFECTS = {
    "paper's theorem carrying the book's gamma": """
````{prf:theorem} Pure attention collapses (the paper's Theorem 2.2)
:label: thm-collapse-single

Then the bound holds, with $\\gamma$ the constant of {prf:ref}`def-gamma` (the largest over \
the layers).
````
""",
    "the book's layerwise form credited to the paper": """
forward pass stops at float64's rounding floor. Dashed and dotted: the bound of \
the paper's Theorems 2.2/2.3 as stated
and with each layer's own constant.
""",
    "the book's cascade credited to the paper's theorem": """
**The cascade.** Write $r_l$ and $c$ with $\\gamma$ and $\\beta$ the largest over layers. The lemma
gives $r_{l} \\le c\\, r_{l-1}^3$, which is {prf:ref}`thm-collapse-single`.
""",
    "the note's words as the paper's conclusion": """
The paper's conclusion reads "LayerNorm cannot help", but what the argument shows is about rank.
""",
    "the note's reading as the paper's": """
The paper reads a transformer the same way: long paths have lost their residual, short ones have \
not.
""",
    "an unchecked appendix": """
Section 2 of the paper writes a network as a sum over paths. Its appendix measures how close such
products come to rank one.
""",
    "an unchecked claim about the paper": """
The reading note names what the paper does not weigh: a larger Lipschitz constant.
""",
    "the paper credited with not weighing the price (the mlp chapter's old wording)": """
The note records no measurement of that price, and neither it nor the paper weighs it against \
the account of
section 5.
""",
    "the paper credited with not framing a trade": """
The MLP remedy pulls against the low-sensitivity account; the paper does not frame it as a trade.
""",
    "the paper credited with framing the price": """
The paper frames the price against the account of robustness as low sensitivity.
""",
    "the paper's bound proved with the book's one-centre chain": """
````{prf:theorem} Collapse with MLPs (the paper's Section 3)
:label: thm-mlp-bound

The bound holds.
````

````{prf:proof}
The pure-attention theorem rests on a one-layer step with $a_0$. The MLP adds one step.
````
""",
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_checker_catches_the_issues_defects(name):
    assert claims.misattributions(DEFECTS[name]), f"the checker missed: {name}"


@pytest.mark.parametrize(
    "title",
    ["One layer", "The constant $\\gamma$ of a layer", "Three families that keep the residual"],
)
def test_checker_catches_a_box_without_its_source(title):
    text = f"````{{prf:lemma}} {title}\n:label: x\n\nbody\n````\n"
    assert claims.unsourced_boxes(text)
    fixed = text.replace(title, title + " (this book)")
    assert not claims.unsourced_boxes(fixed)


def test_a_contrast_is_allowed_only_where_the_book_labels_it():
    para = (
        "{prf:ref}`thm-collapse-book` has the form of the paper's Theorems 2.2 and 2.3 and a "
        "$\\gamma$ of {prf:ref}`def-gamma`.\n"
    )
    assert claims.misattributions(para)  # in plain prose: flagged
    boxed = "```{admonition} This book's refinement\n:class: note\n\n" + para + "```\n"
    assert not claims.misattributions(boxed)
    other = "```{admonition} A remark\n:class: note\n\n" + para + "```\n"
    assert claims.misattributions(other)


def test_code_cells_are_not_prose():
    cell = "```{code-cell} ipython3\n# the paper's Theorem 2.2 with rc.theory.gamma\nx = 1\n```\n"
    assert not claims.units(cell)
    assert not claims.misattributions(cell)


def test_the_framing_credited_to_the_note_passes():
    text = (
        "The note records no measurement of that price. It does set the price against the account "
        "of "
        'section 5: the MLP remedy, the note says, "pulls against" that account. That framing is '
        "the note's.\n"
    )
    assert not claims.misattributions(text)


def test_a_note_phrase_is_fine_when_the_note_is_credited():
    text = (
        "\"Layer normalization cannot help\" is the reading note's summary of the paper's "
        "argument.\n"
    )
    assert not claims.misattributions(text)
    assert claims.misattributions(
        text.replace("the reading note's summary of", "the conclusion of").replace(
            "the paper's argument", "the paper's conclusion"
        )
    )
