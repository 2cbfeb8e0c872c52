"""The instructor's guide's generated parts: the chapter map and the assignment sets.

Read from the book's own sources, never typed twice:

- the table of contents (``_toc.yml``): which pages there are, in which part, in reading order;
- each chapter's "In this chapter" box (CONTRIBUTING: a chapter's second element): its
  prerequisites and its time estimate ("about 60 minutes of reading and 30 minutes of
  exercises");
- the exercise map (``_includes/exercise_map.md``): one row per exercise, with its kind,
  difficulty and importance (``d/3``, ``i/3``) and time.

:func:`chapter_map_markdown` and :func:`assignment_markdown` return MyST markdown, which the
book's Sphinx extension ``booktools.ext.guide`` parses into the guide page (``instructors.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT

GUIDE = "instructors"  # the guide's page in _toc.yml
EXERCISE_MAP = ROOT / "_includes" / "exercise_map.md"
NOT_STATED = "not stated"

_BOX = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{admonition\} In this chapter[ \t]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.S | re.M,
)
_LABEL_TITLE = re.compile(r"^\((?P<label>[\w-]+)\)=[ \t]*\n#[ \t]+(?P<title>.+)$", re.M)
_TITLE = re.compile(r"^#[ \t]+(?P<title>.+)$", re.M)
_MINUTES = re.compile(
    r"(?P<reading>\d+)\s+minutes\s+of\s+reading(?:\s+and\s+(?P<exercises>\d+)\s+minutes\s+of"
    r"\s+exercises)?"
)
_MAP_HEADING = re.compile(r"^\*\*\{ref\}`(?P<label>[\w-]+)`\*\*[ \t]*$", re.M)
_MAP_ROW = re.compile(r"^\|\s*`(?P<label>[\w-]+)`\s*\|(?P<rest>.*)\|\s*$")
_RATING = re.compile(r"([123])/3")
KINDS = ("implement", "predict", "read", "explain", "prove")  # the exercise map's kinds


@dataclass
class Chapter:
    """A page of the toc, with what its "In this chapter" box states (``None`` where it has no
    box)."""

    file: str  # as _toc.yml names it: chapters/paths
    part: str | None  # the part's caption
    title: str | None = None
    label: str | None = None  # (chap-paths)=
    prerequisites: str | None = None  # MyST, on one line
    reading: int | None = None  # minutes
    exercises: int | None = None  # minutes, the chapter's own estimate

    @property
    def has_box(self) -> bool:
        return self.prerequisites is not None or self.reading is not None


@dataclass
class MapExercise:
    label: str
    title: str
    kind: str
    difficulty: int  # 1 to 3 (the map's "d/3")
    importance: int  # 1 to 3 (the map's "i/3")
    minutes: int
    assesses: str
    chapter: str  # the chapter's label, as the map's heading names it


@dataclass
class Assignment:
    """An assignment set: groups (weeks) of exercises, with their totals computed."""

    groups: list[tuple[str | None, list[MapExercise]]] = field(default_factory=list)

    @property
    def exercises(self) -> list[MapExercise]:
        return [e for _, group in self.groups for e in group]

    @property
    def minutes(self) -> int:
        return sum(e.minutes for e in self.exercises)


# --------------------------------------------------------------------------- reading the sources


def toc_parts(toc_path: Path = ROOT / "_toc.yml") -> list[tuple[str | None, str]]:
    """``(part caption, file)`` for every file of the toc but its root, in reading order."""
    import yaml

    toc = yaml.safe_load(Path(toc_path).read_text())
    out: list[tuple[str | None, str]] = []

    def walk(node, part):
        if "file" in node:
            out.append((part, node["file"].removesuffix(".md")))
        for key in ("chapters", "sections"):
            for child in node.get(key, []) or []:
                walk(child, part)

    for part in toc.get("parts", []) or []:
        walk(part, part.get("caption"))
    for chapter in toc.get("chapters", []) or []:
        walk(chapter, None)
    return out


def _paragraph(body: str, name: str) -> str | None:
    """The text of the box's paragraph that starts ``**name**:``, on one line (``None``: absent)."""
    for para in re.split(r"\n[ \t]*\n", body):
        para = para.strip()
        if para.startswith(f"**{name}**"):
            text = para[len(name) + 4 :].lstrip(":").strip()
            return " ".join(line.strip() for line in text.splitlines())
    return None


def read_chapter(file: str, part: str | None = None, root: Path = ROOT) -> Chapter:
    """The page ``file`` (toc name) and what its "In this chapter" box says."""
    path = Path(root) / (file + ".md")
    chapter = Chapter(file=file, part=part)
    if path.is_file():
        text = path.read_text()
    elif path.with_suffix(".ipynb").is_file():  # a staged copy's executed notebook (booktools.pdf)
        import nbformat

        cells = nbformat.read(path.with_suffix(".ipynb"), as_version=4).cells
        text = "\n\n".join(c.source for c in cells if c.cell_type == "markdown")
    else:
        return chapter
    m = _LABEL_TITLE.search(text)
    if m:
        chapter.label, chapter.title = m["label"], m["title"].strip()
    else:
        t = _TITLE.search(text)
        chapter.title = t["title"].strip() if t else None
    box = _BOX.search(text)
    if box:
        chapter.prerequisites = _paragraph(box["body"], "Prerequisites") or NOT_STATED
        time = _paragraph(box["body"], "Time") or ""
        minutes = _MINUTES.search(time)
        if minutes:
            chapter.reading = int(minutes["reading"])
            chapter.exercises = int(minutes["exercises"]) if minutes["exercises"] else None
    return chapter


def chapters(root: Path = ROOT) -> list[Chapter]:
    """Every page of the toc but its root and the guide, read (:func:`read_chapter`)."""
    return [
        read_chapter(f, part, root) for part, f in toc_parts(Path(root) / "_toc.yml") if f != GUIDE
    ]


def exercise_map(path: Path = EXERCISE_MAP) -> dict[str, MapExercise]:
    """The exercise map's rows by label, in the map's order."""
    out: dict[str, MapExercise] = {}
    chapter = None
    for line in Path(path).read_text().splitlines():
        heading = _MAP_HEADING.match(line)
        if heading:
            chapter = heading["label"]
            continue
        row = _MAP_ROW.match(line)
        if not row:
            continue
        cells = [c.strip() for c in row["rest"].split("|")]
        if len(cells) != 6:
            raise ValueError(
                f"exercise map row {row['label']!r}: expected 7 cells, got {len(cells) + 1}"
            )
        title, kind, difficulty, importance, time, assesses = cells
        if kind not in KINDS:
            raise ValueError(
                f"exercise map row {row['label']!r}: kind {kind!r} is not one of {', '.join(KINDS)}"
            )
        ratings = []
        for name, cell in (("difficulty", difficulty), ("importance", importance)):
            m = _RATING.fullmatch(cell)
            if m is None:
                raise ValueError(
                    f"exercise map row {row['label']!r}: {name} {cell!r} is not '1/3', '2/3' or "
                    "'3/3'"
                )
            ratings.append(int(m[1]))
        minutes = re.fullmatch(r"(\d+) min", time)
        if minutes is None:
            raise ValueError(f"exercise map row {row['label']!r}: time {time!r} is not 'N min'")
        out[row["label"]] = MapExercise(
            row["label"], title, kind, *ratings, int(minutes[1]), assesses, chapter
        )
    return out


# --------------------------------------------------------------------------- what the guide shows


def _minutes(n: int | None) -> str:
    return NOT_STATED if n is None else f"{n} min"


def _hours(n: int) -> str:
    h, m = divmod(n, 60)
    return f"{n} min" if h == 0 else f"{n} min ({h} h {m:02d})" if m else f"{n} min ({h} h)"


def chapter_map_markdown(root: Path = ROOT, map_path: Path | None = None) -> str:
    """The chapter map: a row per chapter (a page with an "In this chapter" box) in toc order,
    then a line naming the toc's other pages."""
    pages = chapters(root)
    exercises = exercise_map(map_path or Path(root) / "_includes" / "exercise_map.md")
    by_chapter: dict[str, list[MapExercise]] = {}
    for e in exercises.values():
        by_chapter.setdefault(e.chapter, []).append(e)
    lines = [
        "| Part | Chapter | Prerequisites | Reading | Exercises (the chapter's estimate) "
        "| Exercises in the map: how many, their times added |",
        "|---|---|---|---|---|---|",
    ]
    others = []
    for page in pages:
        if not page.has_box:
            others.append(page)
            continue
        mapped = by_chapter.get(page.label, [])
        kinds = ", ".join(
            f"{sum(e.kind == k for e in mapped)} {k}" for k in dict.fromkeys(e.kind for e in mapped)
        )
        in_map = (
            f"{len(mapped)} ({kinds}), {sum(e.minutes for e in mapped)} min"
            if mapped
            else "none yet"
        )
        lines.append(
            f"| {page.part or ''} | {{doc}}`/{page.file}` | {page.prerequisites} | "
            f"{_minutes(page.reading)} "
            f"| {_minutes(page.exercises)} | {in_map} |"
        )
    text = "\n".join(lines) + "\n"
    if others:
        names = ", ".join(
            f"{{doc}}`/{p.file}`" + (f" ({p.part})" if p.part else "") for p in others
        )
        text += f"\nThe book's other pages: {names}.\n"
    return text


_GROUP = re.compile(r"^(?P<name>[^:]+):\s*(?P<labels>.*)$")


def parse_assignment(content: str, exercises: dict[str, MapExercise] | None = None) -> Assignment:
    """An assignment set from lines ``Week 1: ex-a, ex-b`` (or bare labels, one group);
    a label the exercise map does not hold is an error (ValueError naming it)."""
    exercises = exercise_map() if exercises is None else exercises
    assignment = Assignment()
    for line in content.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _GROUP.match(line)
        name, labels = (m["name"].strip(), m["labels"]) if m else (None, line)
        found = []
        for label in re.split(r"[,\s]+", labels.strip()):
            if not label:
                continue
            if label not in exercises:
                raise ValueError(f"assignment set: no exercise {label!r} in the exercise map")
            found.append(exercises[label])
        if name is None and assignment.groups and assignment.groups[-1][0] is None:
            assignment.groups[-1][1].extend(found)
        else:
            assignment.groups.append((name, found))
    labels = [e.label for e in assignment.exercises]
    repeated = sorted({x for x in labels if labels.count(x) > 1})
    if repeated:
        raise ValueError(f"assignment set: exercise(s) listed twice: {', '.join(repeated)}")
    if not labels:
        raise ValueError("assignment set: no exercise listed")
    return assignment


def assignment_markdown(content: str, root: Path = ROOT, map_path: Path | None = None) -> str:
    """The assignment set's table (one row per exercise, a total per group and overall) and a
    line with the reading its chapters need (their boxes' estimates added)."""
    exercises = exercise_map(map_path or Path(root) / "_includes" / "exercise_map.md")
    assignment = parse_assignment(content, exercises)
    by_label = {p.label: p for p in chapters(root) if p.label}
    lines = [
        "| | Exercise | Chapter | Kind | Difficulty | Importance | Time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, group in assignment.groups:
        for e in group:
            lines.append(
                f"| {name or ''} | {e.title} (`{e.label}`) | {{ref}}`{e.chapter}` | {e.kind} "
                f"| {e.difficulty}/3 | {e.importance}/3 | {e.minutes} min |"
            )
        if name and len(assignment.groups) > 1:
            lines.append(
                f"| | **{name}: {len(group)} exercises** | | | | | "
                f"**{_hours(sum(e.minutes for e in group))}** |"
            )
    lines.append(
        f"| | **In all: {len(assignment.exercises)} exercises** | | | | | "
        f"**{_hours(assignment.minutes)}** |"
    )
    text = "\n".join(lines) + "\n"
    reading = []
    for name, group in assignment.groups:
        labels = list(dict.fromkeys(e.chapter for e in group))
        pages = [by_label[c] for c in labels if c in by_label]
        known = [p.reading for p in pages if p.reading is not None]
        if len(known) < len(labels):
            continue
        # a chapter counts once, in the first group that draws on it
        earlier = {
            e.chapter
            for n, g in assignment.groups[: assignment.groups.index((name, group))]
            for e in g
        }
        new = [p for p in pages if p.label not in earlier]
        if new:
            chapters_read = ", ".join(f"{{ref}}`{p.label}`" for p in new)
            reading.append(
                ((f"{name}: " if name else ""), chapters_read, sum(p.reading for p in new))
            )
    if reading:
        total = sum(r[2] for r in reading)
        parts = "; ".join(f"{who}{names}, {_hours(n)}" for who, names, n in reading)
        text += (
            f"\nReading first (the chapters' own estimates, each chapter counted once): {parts}"
            + (f"; {_hours(total)} in all" if len(reading) > 1 else "")
            + ".\n"
        )
    return text


def rubrics_markdown(root: Path = ROOT, map_path: Path | None = None) -> str:
    """The rubrics of the exercises graded by hand (prove, explain), in the exercise map's order:
    each criterion with its points, then the common wrong turns. Read from the check registry
    (``rankbook.checks.RUBRICS``), where the grader reads them too."""
    import rankbook as book

    exercises = exercise_map(map_path or Path(root) / "_includes" / "exercise_map.md")
    unknown = sorted(set(book.checks.RUBRICS) - set(exercises))
    if unknown:
        raise ValueError(
            f"rubrics for exercises the exercise map does not hold: {', '.join(unknown)}"
        )
    blocks = []
    for e in exercises.values():
        rubric = book.checks.RUBRICS.get(e.label)
        if rubric is None:
            continue
        lines = [
            f"**{e.title}** (`{e.label}`, {{ref}}`{e.chapter}`, {e.kind}, difficulty "
            f"{e.difficulty}/3): "
            f"{rubric.points:g} points.",
            "",
        ]
        lines += [f"- {p:g} point{'' if p == 1 else 's'}: {text}" for p, text in rubric.criteria]
        if rubric.wrong_turns:
            lines += ["", "Common wrong turns:", ""] + [f"- {w}" for w in rubric.wrong_turns]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
