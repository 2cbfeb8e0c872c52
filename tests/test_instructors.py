"""The instructor's guide (instructors.md): its generated chapter map and assignment sets
(booktools.guide, tools/booktools/ext/guide.py), and the page as the book build renders it."""

import re

import pytest

from booktools import ROOT, guide
from booktools.toc import toc_files

MAP = guide.exercise_map()


def _guide_sets() -> list[str]:
    """The content of every {assignment-set} block of instructors.md."""
    text = (ROOT / "instructors.md").read_text()
    return re.findall(r"^```\{assignment-set\}[^\n]*\n(.*?)^```", text, re.S | re.M)


def test_the_guide_is_in_the_toc_and_the_map_names_every_other_page():
    files = [f.removesuffix(".md") for f in toc_files()]
    assert guide.GUIDE in files
    text = guide.chapter_map_markdown()
    for f in files[1:]:  # the root (the landing page) is every page's parent
        if f != guide.GUIDE:
            assert f"{{doc}}`/{f}`" in text, f


def test_the_chapter_map_reads_each_box():
    """Prerequisites and reading time as the chapter states them (read here independently)."""
    rows = {
        m[1]: m[0]
        for m in re.findall(r"^(\|.*\{doc\}`/([\w/]+)`.*\|)$", guide.chapter_map_markdown(), re.M)
    }
    for page in guide.chapters():
        source = (ROOT / (page.file + ".md")).read_text()
        if "{admonition} In this chapter" not in source:
            assert page.file not in rows
            continue
        reading = re.search(r"about (\d+) minutes of reading", source)
        assert page.reading == int(reading[1]), page.file
        cells = [c.strip() for c in rows[page.file].strip("|").split("|")]
        assert cells[3] == f"{reading[1]} min", cells
        words = re.search(r"\*\*Prerequisites\*\*:\s*(.*?)\n\s*\n", source, re.S)[1].split()
        assert cells[2] == " ".join(words), cells
        mine = [e for e in MAP.values() if e.chapter == page.label]
        assert cells[5].startswith(f"{len(mine)} (") and cells[5].endswith(
            f"{sum(e.minutes for e in mine)} min"
        )
        # the box's minutes of exercises are the map's times of the chapter's exercises, added
        exercises = re.search(r"minutes of reading and\s+(\d+)\s+minutes\s+of\s+exercises", source)
        assert exercises and int(exercises[1]) == sum(e.minutes for e in mine), (
            page.file,
            exercises and exercises[1],
        )
        assert cells[4] == f"{exercises[1]} min", cells


def test_a_page_without_a_box_is_listed_among_the_other_pages(tmp_path):
    (tmp_path / "_includes").mkdir()
    (tmp_path / "_includes" / "exercise_map.md").write_text(guide.EXERCISE_MAP.read_text())
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: A\n    chapters:\n"
        "      - file: chapters/new\n      - file: instructors\n"
    )
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "new.md").write_text("(chap-new)=\n# After the paper\n\nNo box yet.\n")
    text = guide.chapter_map_markdown(tmp_path)
    assert "The book's other pages: {doc}`/chapters/new` (A)." in text and "instructors" not in text


def test_assignment_totals_are_the_map_times_added():
    content = "Week 1: ex-paths-count, ex-paths-explain\nWeek 2: ex-skip-layer ex-collapse-cascade"
    text = guide.assignment_markdown(content)
    week1 = MAP["ex-paths-count"].minutes + MAP["ex-paths-explain"].minutes
    week2 = MAP["ex-skip-layer"].minutes + MAP["ex-collapse-cascade"].minutes
    assert f"**Week 1: 2 exercises** | | | | | **{week1} min" in text
    assert f"**Week 2: 2 exercises** | | | | | **{week2} min" in text
    assert f"**In all: 4 exercises** | | | | | **{week1 + week2} min" in text
    # reading: each chapter once, in the first week that draws on it
    paths, collapse, skip = (
        guide.read_chapter(f"chapters/{n}") for n in ("paths", "collapse", "skip")
    )
    assert (
        f"Week 2: {{ref}}`chap-skip`, {{ref}}`chap-collapse`, {skip.reading + collapse.reading} min"
        in text
    )
    assert f"{paths.reading + skip.reading + collapse.reading} min" in text


@pytest.mark.parametrize(
    "cell, value, match",
    [
        (4, "hard", "difficulty 'hard'"),
        (5, "4/3", "importance '4/3'"),
        (3, "derive", "kind 'derive'"),
        (6, "10", "time '10'"),
    ],
)
def test_the_map_refuses_a_bad_rating_kind_or_time(tmp_path, cell, value, match):
    text = guide.EXERCISE_MAP.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `ex-paths-count`"))
    cells = row.split("|")
    cells[cell] = f" {value} "
    bad = tmp_path / "map.md"
    bad.write_text(text.replace(row, "|".join(cells)))
    with pytest.raises(ValueError, match=re.escape(match)):
        guide.exercise_map(bad)


def test_the_map_reads_the_ratings():
    e = MAP["ex-paths-count"]
    row = next(
        line
        for line in guide.EXERCISE_MAP.read_text().splitlines()
        if line.startswith("| `ex-paths-count`")
    )
    assert f"| {e.difficulty}/3 | {e.importance}/3 | {e.minutes} min |" in row
    assert all(1 <= x.difficulty <= 3 and 1 <= x.importance <= 3 for x in MAP.values())


@pytest.mark.parametrize(
    "content, match",
    [
        ("ex-no-such", "no exercise 'ex-no-such'"),
        ("ex-paths-count ex-paths-count", "listed twice"),
        ("", "no exercise listed"),
    ],
)
def test_assignment_sets_refuse_bad_labels(content, match):
    with pytest.raises(ValueError, match=match):
        guide.parse_assignment(content)


def test_the_guide_sets_hold_every_kind():
    sets = _guide_sets()
    assert len(sets) == 2
    for content in sets:
        kinds = {e.kind for e in guide.parse_assignment(content).exercises}
        assert kinds >= {"implement", "predict", "read", "explain"}, kinds
    assert "prove" in {e.kind for e in guide.parse_assignment(sets[-1]).exercises}


def test_the_rubrics_section_lists_every_rubric_with_its_points_and_wrong_turns():
    import rankbook as book

    text = guide.rubrics_markdown()
    assert "```{rubrics}\n```" in (ROOT / "instructors.md").read_text()
    positions = []
    for label, rubric in book.checks.RUBRICS.items():
        e = MAP[label]
        head = (
            f"**{e.title}** (`{label}`, {{ref}}`{e.chapter}`, {e.kind}, "
            f"difficulty {e.difficulty}/3): {rubric.points:g} points."
        )
        assert head in text, head
        positions.append(list(MAP).index(label))
        block = text[text.index(head) :].split("\n\n**", 1)[0]
        for points, criterion in rubric.criteria:
            assert f"- {points:g} point" in block and criterion in block
        for turn in rubric.wrong_turns:
            assert f"- {turn}" in block
    assert text.index("`ex-paths-prove`") < text.index("`ex-limits-prove`")  # the map's order
    assert all(MAP[label].kind in ("explain", "prove") for label in book.checks.RUBRICS)


def test_a_rubric_for_an_exercise_the_map_lacks_is_refused(tmp_path):
    text = guide.EXERCISE_MAP.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `ex-paths-prove`"))
    bad = tmp_path / "map.md"
    bad.write_text(text.replace(row + "\n", ""))
    with pytest.raises(ValueError, match="ex-paths-prove"):
        guide.rubrics_markdown(map_path=bad)


@pytest.mark.build
def test_the_guide_renders_and_lists_every_chapter(built_book):
    page = (built_book / "html" / "instructors.html").read_text()
    body = page.split('<article class="bd-article">', 1)[1]
    for f in toc_files()[1:]:
        f = f.removesuffix(".md")
        if f != guide.GUIDE:
            assert re.search(r'href="(\.\./)?' + re.escape(f) + r"\.html", body), f
    for label in MAP:  # the exercise map and the sets, rendered
        assert label in body
    assert "In all: " in body and "{assignment-set}" not in body and "{chapter-map}" not in body
    assert "paths.count" in body  # the example grade sheet
