"""booktools.ext.pdfsetup, without TeX: the formulas' macros for the preamble, where the front,
main and back matter begin, and the proofs' box titles (tests/test_pdf.py checks the typeset
PDF)."""

import yaml
from docutils import nodes

from booktools import ROOT
from booktools.ext import pdfsetup


def test_the_macros_are_mathjaxs():
    config = {"tex": {"macros": {"res": "\\operatorname{res}", "norm": ["\\lVert #1 \\rVert", 1]}}}
    assert pdfsetup.latex_macros(config).splitlines() == [
        "\\newcommand{\\res}{\\operatorname{res}}",
        "\\newcommand{\\norm}[1]{\\lVert #1 \\rVert}",
    ]
    assert pdfsetup.latex_macros(None) == ""


def test_the_books_parts_start_the_main_matter_and_the_back_matter():
    marks = pdfsetup.matter_marks(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    first, *parts, back = list(marks.values())
    assert first.startswith("\\mainmatter\n\\part{") and back == "\\backmatter"
    assert parts and all(p.startswith("\\part{") for p in parts)


def _proof(text):
    box = nodes.admonition(classes=["proof", "proof"])
    box += nodes.paragraph("", "", nodes.Text(text))
    return box


def test_a_proof_box_is_titled_proof():
    doc = nodes.section()
    doc += [_proof("Proof. One layer."), _proof("No prefix."), nodes.admonition(classes=["note"])]
    assert pdfsetup.title_proofs(doc) == 1
    box = doc[0]
    assert box[0].astext() == "Proof." and box[1].astext() == "One layer."
    assert doc[1].astext() == "No prefix."  # a box that does not start "Proof. " is left alone
    assert pdfsetup.title_proofs(doc) == 0  # titled once only
