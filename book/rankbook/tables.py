"""Tables as the book shows them: Markdown for the page and Jupyter, HTML for notebooks that
render it, aligned plain text where nothing renders. Gluing a table into the prose is
:func:`rankbook.page.glue_table`.
"""

from __future__ import annotations

__all__ = ["Table", "markdown_table"]


class Table:
    """A table shown as a table: Markdown for the book's page (``{glue:md}``) and for Jupyter,
    HTML for notebooks that render it, aligned plain text where nothing renders (``print``)."""

    def __init__(self, header, rows, align=None):
        self.header = [str(h) for h in header]
        self.rows = [[str(c) for c in row] for row in rows]
        if any(len(r) != len(self.header) for r in self.rows):
            raise ValueError(f"every row must have {len(self.header)} cells (one per header)")
        align = align or "l" + "r" * (len(self.header) - 1)
        if len(align) != len(self.header) or set(align) - set("lrc"):
            raise ValueError(f"align must be one of l, r, c per column, got {align!r}")
        self.align = align

    def transpose(self) -> Table:
        """The table turned: its first column becomes the header and its header the first column,
        so that a table of a few rows and many columns (a value per layer or per path length)
        reads down the page and fits its column. The labels are left-aligned, the values right."""
        header = [self.header[0], *(row[0] for row in self.rows)]
        rows = [
            [self.header[j], *(row[j] for row in self.rows)] for j in range(1, len(self.header))
        ]
        return Table(header, rows, align="l" + "r" * len(self.rows))

    def _repr_markdown_(self):
        return markdown_table(self.header, self.rows, self.align)

    def _repr_html_(self):
        side = {"l": "left", "r": "right", "c": "center"}
        head = "".join(
            f'<th style="text-align:{side[a]}">{_html(h)}</th>'
            for h, a in zip(self.header, self.align)
        )
        # numbers do not wrap (_static/book.css); a range of numbers ("0.055 to 0.091") may, at
        # its spaces, so that a table of ranges fits the text column
        wrap = lambda c, a: "; white-space:normal" if a != "l" and " to " in c else ""  # noqa: E731
        body = "".join(
            "<tr>"
            + "".join(
                f'<td style="text-align:{side[a]}{wrap(c, a)}">{_html(c)}</td>'
                for c, a in zip(row, self.align)
            )
            + "</tr>"
            for row in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self):
        cols = list(zip(self.header, *self.rows))
        widths = [max(len(c) for c in col) for col in cols]
        fmt = lambda row: "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w)  # noqa: E731
            for c, w, a in zip(row, widths, self.align)
        )
        return "\n".join(
            [fmt(self.header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in self.rows]
        )


def _html(text: str) -> str:
    import html

    return html.escape(text)


def markdown_table(header, rows, align=None) -> str:
    """A Markdown (MyST, GitHub) table: ``header`` a list of column titles, ``rows`` lists of cells.

    ``align``: one of ``l``, ``r``, ``c`` per column (default: first left, the rest right, for
    numbers). A ``|`` in a cell is escaped. An empty ``header`` is refused (a table needs a column).
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must hold at least one column title, got none")
    rows = [list(r) for r in rows]
    for i, r in enumerate(rows):
        if len(r) != len(header):
            raise ValueError(
                f"rows[{i}] has {len(r)} cells, the header {len(header)}: every row needs one "
                "cell per header"
            )
    align = align or "l" + "r" * (len(header) - 1)
    rule = {"l": ":--", "r": "--:", "c": ":-:"}

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join(
        [line(header), "|" + "|".join(rule[a] for a in align) + "|"] + [line(r) for r in rows]
    )
