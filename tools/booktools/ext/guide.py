"""The instructor's guide's generated parts, as directives (loaded by `_config.yml`).

- ``{chapter-map}``: a row per chapter of `_toc.yml` with its prerequisites and time, read from
  the chapter's "In this chapter" box, and the exercise map's count and times added;
- ``{assignment-set}``: an assignment set, its content lines ``Week 1: ex-a, ex-b``; a table of
  its exercises (kind, difficulty, importance, time from `_includes/exercise_map.md`) with the
  totals computed, and the reading its chapters need. An exercise the map does not hold fails the
  build;
- ``{rubrics}``: the rubric of every exercise graded by hand (prove, explain), its points per step
  and its common wrong turns, from the check registry (`rankbook.checks.RUBRICS`).

The Markdown comes from `booktools.guide` and is parsed here as the page's own MyST, so the
roles in it (`{doc}`, `{ref}`, `{cite:p}`) resolve as anywhere else. Each page that uses them
depends on `_toc.yml`, the exercise map and every chapter (an incremental build rereads it).
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from booktools import guide


class _Generated(SphinxDirective):
    @property
    def root(self) -> Path:
        return Path(self.env.srcdir)

    def _parse(self, markdown: str) -> list[nodes.Node]:
        env, root = self.env, self.root
        env.note_dependency(str(root / "_toc.yml"))
        env.note_dependency(str(root / "_includes" / "exercise_map.md"))
        for page in guide.chapters(root):
            path = root / (page.file + ".md")
            if path.is_file():
                env.note_dependency(str(path))
        container = nodes.container(classes=["guide-generated"])
        self.state.nested_parse(
            StringList(markdown.splitlines(), source="(generated)"), self.content_offset, container
        )
        return container.children


class ChapterMap(_Generated):
    has_content = False

    def run(self):
        return self._parse(guide.chapter_map_markdown(self.root))


class AssignmentSet(_Generated):
    has_content = True

    def run(self):
        try:
            markdown = guide.assignment_markdown("\n".join(self.content), self.root)
        except ValueError as e:
            raise self.error(str(e)) from None
        return self._parse(markdown)


class Rubrics(_Generated):
    has_content = False

    def run(self):
        for path in sorted((self.root / "book" / "rankbook" / "checks").glob("*.py")):
            self.env.note_dependency(str(path))  # the rubrics live in the check registry
        try:
            markdown = guide.rubrics_markdown(self.root)
        except ValueError as e:
            raise self.error(str(e)) from None
        return self._parse(markdown)


def setup(app):
    app.add_directive("rubrics", Rubrics)
    app.add_directive("chapter-map", ChapterMap)
    app.add_directive("assignment-set", AssignmentSet)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
