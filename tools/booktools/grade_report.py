"""The grader's outputs besides ``grades.csv``: one Markdown report per submission, and the
grade sheet as a Markdown table (``grades.md``; the tests write the sample submissions' one to
``_includes/example_grades.md`` for the instructor's guide)."""

from __future__ import annotations

import re
from pathlib import Path

MARK = {"correct": "✔", "incorrect": "✘", "not attempted": "…", "crashed": "💥", "timed out": "⏱",
        "missing": "∅", "edited": "✎", "tampered": "⚠"}


def report_name(rel: str, taken: set) -> str:
    """A report file name for the submission at ``rel``, unique within ``taken`` (updated):
    ``alice/paths.ipynb`` -> ``alice__paths.ipynb.md``, so that ``x.md`` and ``x.ipynb`` differ."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__"))
    name, k = base + ".md", 1
    while name.lower() in taken:
        k += 1
        name = f"{base}-{k}.md"
    taken.add(name.lower())
    return name


def _cell(text: str) -> str:
    return text.replace("\n", " ")  # one line: a table row, a list item (``|`` is escaped by the table)


def _table(header, rows) -> list[str]:
    """The library's Markdown table (:func:`rankcollapse.book.markdown_table`), every column left."""
    from rankcollapse.book import markdown_table

    return markdown_table(header, rows, align="l" * len(header)).split("\n")


def write_report(sub, path: Path) -> None:
    right = sum(o == "correct" for o, _ in sub.outcomes.values())
    lines = [f"# {sub.rel}", "",
             f"- chapter: {sub.chapter or 'not recognised (no check of any chapter found)'}",
             f"- run: {sub.run}",
             f"- score: {right} of {len(sub.outcomes)} checks correct", ""]
    if sub.outcomes:
        lines += _table(["check", "outcome", "details"],
                        [[f"`{ex_id}`", f"{MARK.get(outcome, '')} {outcome}", _cell(message)]
                         for ex_id, (outcome, message) in sub.outcomes.items()])
        lines.append("")
    if sub.cell_errors:
        lines += ["Cells that raised an error (the run went on with the next cell):", ""]
        lines += [f"- code cell {i}: `{_cell(e)}`" for i, e in sub.cell_errors[:20]]
        if len(sub.cell_errors) > 20:
            lines.append(f"- ... and {len(sub.cell_errors) - 20} more")
        lines.append("")
    lines.append("Outcomes are the library's checks, run by the grader on the answers taken out of "
                 "the notebook after it ran, never what the notebook printed.")
    path.write_text("\n".join(lines) + "\n")


def markdown_table(subs, ids: list[str]) -> str:
    """The grade sheet as a Markdown table: one row a submission, one column a check."""
    head = ["submission", "chapter", "run", *(f"`{i}`" for i in ids), "correct"]
    rows = []
    for s in subs:
        right = sum(o == "correct" for o, _ in s.outcomes.values())
        rows.append([f"`{s.rel}`", s.chapter or "", s.run, *(s.outcomes.get(i, ("",))[0] for i in ids),
                     f"{right} of {len(s.outcomes)}"])
    return "\n".join(_table(head, rows)) + "\n"
