"""rc.later.verdicts: the closing table of "After the paper", built from hand-made verdicts."""

import pytest

import rankcollapse as rc

V = rc.later.verdicts


def verdict(result="A claim", cite="noci2022signal", agreement="agrees", untested=""):
    return V.Verdict(result=result, cite=cite, assumes="initialisation", measured="ratio 1e-18 at layer 12",
                     agreement=agreement, untested=untested)


def test_table_has_one_row_per_verdict_in_order():
    vs = [verdict("first", agreement="agrees"), verdict("second", cite="wu2024role", agreement="partly", untested="training"),
          verdict("third", cite="odd-key", agreement="not tested")]
    t = V.table(vs)
    assert isinstance(t, rc.book.Table)
    assert t.header == list(V.HEADER)
    assert [r[0] for r in t.rows] == ["first", "second", "third"]
    assert [r[1] for r in t.rows] == ["Noci et al. 2022", "Wu et al. 2024", "odd-key"]
    assert [r[4] for r in t.rows] == ["agrees", "partly", "not tested"]
    assert t.rows[0][5] == "none" and t.rows[1][5] == "training"
    md = t._repr_markdown_()
    assert md.count("\n") == 1 + len(vs) and "| first | Noci et al. 2022 |" in md
    named = V.table(vs, names={"wu2024role": "Wu, Ajorlou, Wang, Jegelka, Jadbabaie (2024)"})
    assert named.rows[1][1].startswith("Wu, Ajorlou") and named.rows[0][1] == "Noci et al. 2022"


def test_every_cited_work_is_labelled_as_its_authors_are():
    """Each key a result module of rc.later cites gets the label the bibliography gives it
    (the book's author-year style, _ext/bookext.py: "X 2025", "X and Y 2025", "X et al. 2025"),
    without the comma."""
    import re
    from pathlib import Path

    import bookext  # _ext/ is on pytest's pythonpath (pyproject.toml)
    from pybtex.database import parse_file

    root = Path(__file__).resolve().parents[1]
    entries = parse_file(str(root / "references.bib")).entries
    cited = set()
    for module in (root / "lib" / "rankcollapse" / "later").glob("*.py"):
        cited |= set(re.findall(r'cite="([a-z0-9]+)"', module.read_text()))
    assert len(cited) >= 5
    for key in sorted(cited):
        assert key in entries, f"{key} is not in references.bib"
        who, year = bookext.AuthorYearLabels().format_label(entries[key]).rsplit(", ", 1)
        assert V.work_label(key) == f"{who} {year}", key


def test_work_label():
    assert V.work_label("geshkovski2023mathematical") == "Geshkovski et al. 2023"
    assert V.work_label("Not_A_Key") == "Not_A_Key"
    with pytest.raises(TypeError, match="cite"):
        V.work_label(3)


def test_table_refuses_bad_input():
    with pytest.raises(TypeError, match="verdicts"):
        V.table(verdict())
    with pytest.raises(TypeError, match=r"verdicts\[1\]"):
        V.table([verdict(), "agrees"])
    with pytest.raises(ValueError, match="at least one"):
        V.table([])
    with pytest.raises(ValueError, match="twice"):
        V.table([verdict(), verdict()])


def test_verdict_refuses_an_empty_field_or_an_unknown_agreement():
    with pytest.raises(ValueError, match="measured"):
        V.Verdict(result="r", cite="c", assumes="a", measured=" ", agreement="agrees")
    with pytest.raises(ValueError, match="agreement"):
        verdict(agreement="yes")
