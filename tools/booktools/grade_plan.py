"""What the grader knows before it runs anything: each chapter's checks and hand-graded
exercises (read from the chapter's student version and the check registry), the submissions in
a folder, and the plan of cells to run for one submission.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

OUTPUT_MARK = "grades.json"  # every folder the grader writes holds one: never graded as submissions


@dataclass
class CheckSpec:
    id: str
    name: str  # the variable the original check cell passes
    kind: str  # "function" or "value"
    tree: str  # ast.dump of the original check cell
    label: str = ""  # the exercise's label, ex-paths-count
    points: float = 1.0


@dataclass
class HandSpec:
    """An exercise whose answer the instructor reads: explain/prove (scored by hand) or predict
    (scored by its check; a hand score replaces the check's)."""

    label: str
    title: str
    kind: str  # "explain" (no check) or the kind of the check's Question ("predict")
    points: float
    criteria: list  # [(points, text)]
    model: str  # the solution's text, as the chapter states it
    check: str | None = None  # the check id of a predict question
    wrong_turns: tuple = ()  # the rubric's common wrong turns (a prove or explain question)


@dataclass
class ChapterSpec:
    name: str
    title: str
    checks: list[CheckSpec]
    hand: list[HandSpec]
    trees: set = field(default_factory=set)  # every code cell of the student version (ast.dump)
    student_cells: list = field(
        default_factory=list
    )  # [(cell_type, source)] of the student version
    answers: list = field(default_factory=list)  # the labels of its answer cells, in order

    @property
    def max_points(self) -> float:
        return sum(c.points for c in self.checks) + sum(
            h.points for h in self.hand if h.check is None
        )


def tree(source: str) -> str | None:
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.dump(ast.parse(TransformerManager().transform_cell(source)))
    except (SyntaxError, ValueError):
        return None


_EXERCISE = re.compile(
    r"^(`{3,}|:{3,})\{exercise-start\}\n:label: "
    r"(\S+)\n\1\n\n\*\*([^*]+)\*\*(.*?)^\1\{exercise-end\}",
    re.M | re.S,
)
_CHECK_CALL = re.compile(r"""book\.checks\.check\(["']([^"']+)["']""")
_GOOD_ANSWER = re.compile(r"A good answer[^.]*\.", re.S)


def _solution(text: str, label: str) -> str:
    m = re.search(
        rf"^(`{{3,}}|:{{3,}})\{{solution-start\}} {re.escape(label)}\n(?::class: \w+\n)?\1\n(.*?)"
        rf"^\1\{{solution-end\}}",
        text,
        re.M | re.S,
    )
    return m.group(2).strip() if m else ""


def _hand_specs(text: str, checks: dict[str, str]) -> list[HandSpec]:
    """The chapter's exercises without a check, and its predictions (``checks``: label -> check
    id)."""
    import rankbook as book

    out = []
    for m in _EXERCISE.finditer(text):
        label, title = m.group(2), m.group(3).strip()
        model = _solution(text, label)
        if label in checks:
            q = book.checks.QUESTIONS.get(checks[label])
            if q is None or q.kind != "predict":
                continue
            out.append(
                HandSpec(
                    label,
                    title,
                    "predict",
                    float(q.points),
                    [
                        (
                            q.points,
                            "Scored by the check (the prediction itself); a score "
                            "given here replaces it, e.g. for the reasoning.",
                        )
                    ],
                    model,
                    checks[label],
                )
            )
            continue
        rubric = book.checks.RUBRICS.get(label)
        wrong_turns = ()
        if rubric is not None:
            criteria = [(float(p), c) for p, c in rubric.criteria]
            wrong_turns = rubric.wrong_turns
        else:
            good = " ".join(" ".join(s.split()) for s in _GOOD_ANSWER.findall(model))
            criteria = [(1.0, good or "Agrees with the model answer in substance.")]
        kind = "explain" if title.startswith("Explain") else title.split(":")[0].strip().lower()
        kind = "prove" if kind.startswith("prove") else kind  # "Prove, then explain: ..."
        out.append(
            HandSpec(
                label,
                title,
                kind,
                sum(p for p, _ in criteria),
                criteria,
                model,
                wrong_turns=wrong_turns,
            )
        )
    return out


def _labels_of_checks(text: str) -> dict[str, str]:
    """label -> the id of the first check called after the exercise (before the next exercise)."""
    starts = [(m.start(), m.group(2)) for m in _EXERCISE.finditer(text)] + [(len(text), None)]
    out = {}
    for (pos, label), (nxt, _) in zip(starts, starts[1:]):
        call = _CHECK_CALL.search(text, pos, nxt)
        if call:
            out[label] = call.group(1)
    return out


def chapter_specs() -> dict[str, ChapterSpec]:
    """Each chapter's checks and hand-graded exercises, from its student version, in book order."""
    import jupytext

    import rankbook as book

    from .student import answer_of, strip_solutions
    from .toc import toc_notebooks

    specs = {}
    for path in toc_notebooks():
        source = path.read_text()
        nb = jupytext.reads(strip_solutions(source), fmt="md:myst")
        labels = _labels_of_checks(source)
        label_of = {v: k for k, v in labels.items()}
        found, trees = [], set()
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            trees.add(tree(cell.source))
            if "checks.check(" not in cell.source:
                continue
            call = next(
                n
                for n in ast.walk(ast.parse(cell.source))
                if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "check"
            )
            ex_id, arg = call.args[0].value, call.args[1]
            entry = book.checks.QUESTIONS.get(ex_id) or book.checks.EXERCISES[ex_id]
            kind = "value" if ex_id in book.checks.QUESTIONS else "function"
            found.append(
                CheckSpec(
                    ex_id,
                    arg.id,
                    kind,
                    tree(cell.source),
                    label_of.get(ex_id, ""),
                    float(entry.points),
                )
            )
        if found:
            title = re.search(r"^#\s+(.+)$", source, re.M)
            specs[path.stem] = ChapterSpec(
                path.stem,
                title.group(1).strip() if title else path.stem,
                found,
                _hand_specs(source, labels),
                trees - {None},
                [(c.cell_type, c.source) for c in nb.cells],
                [answer_of(c.metadata) for c in nb.cells if answer_of(c.metadata)],
            )
    return specs


def _is_output(folder: Path) -> bool:
    return (folder / OUTPUT_MARK).is_file()


def find_submissions(folder: Path, out: Path) -> list[Path]:
    """Every ``.ipynb`` and ``.md`` file under ``folder``, except in ``out``, in hidden folders and
    in any folder the grader wrote (it holds ``grades.json``): paths compared resolved, so a
    relative ``folder`` or ``out`` finds the same files as an absolute one."""
    folder, out = Path(folder).resolve(), Path(out).resolve()
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if (
            path.suffix not in (".ipynb", ".md")
            or not path.is_file()
            or any(p.startswith(".") for p in rel.parts)
            or out == path.parent
            or out in path.parents
            or any(_is_output(d) for d in path.parents if folder in d.parents or d == folder)
        ):
            continue
        found.append(path)
    return found


def read_cells(path: Path) -> list[dict]:
    """The submission's cells: ``[{"type": "code"|"markdown"|"raw", "source": str, "tags":
    [...], "answer": label or None}]`` (``answer``: the exercise an answer cell belongs to)."""
    import jupytext
    import nbformat

    from .student import answer_of

    nb = nbformat.read(path, as_version=4) if path.suffix == ".ipynb" else jupytext.read(path)
    cells = []
    for cell in nb.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        cells.append(
            {
                "type": cell.cell_type,
                "source": source,
                "tags": list(cell.get("metadata", {}).get("tags", [])),
                "answer": answer_of(cell.get("metadata")),
            }
        )
    return cells


def identify(cells: list[dict], specs: dict[str, ChapterSpec]) -> str | None:
    """The chapter whose check ids the submission's code mentions most (``None``: none)."""
    text = "\n".join(c["source"] for c in cells if c.get("type", "code") == "code")
    counts = {
        ch: sum(bool(re.search(rf"""["']{re.escape(s.id)}["']""", text)) for s in spec.checks)
        for ch, spec in specs.items()
    }
    best = max(counts, key=counts.get, default=None)
    return best if best is not None and counts[best] > 0 else None


def _assigned(source: str) -> set[str]:
    try:
        parsed = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        n.id for n in ast.walk(parsed) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def plan(cells: list[dict], chapter: ChapterSpec | list, mode: str, seed: int = 0):
    """The code cells to run and, per check id, ``"edited"``, ``"missing"`` or ``None``.

    The check cells kept from the chapter are not run (the grader checks); every other cell the
    student wrote or changed is ``traced``; a value answer's ``window`` (returned third) is the
    traced cells since the previous check cell, plus the earlier ones that assign its name."""
    specs = chapter.checks if isinstance(chapter, ChapterSpec) else chapter
    known = chapter.trees if isinstance(chapter, ChapterSpec) else set()
    cells = [c for c in cells if c.get("type", "code") == "code"]
    trees = [tree(c["source"]) for c in cells]
    where, status = {}, {}
    for s in specs:
        mention = re.compile(rf"""["']{re.escape(s.id)}["']""")
        same = [i for i, t in enumerate(trees) if t is not None and t == s.tree]
        mentions = [i for i, c in enumerate(cells) if mention.search(c["source"])]
        if same:
            where[s.id], status[s.id] = same[0], None
        elif mentions:
            where[s.id], status[s.id] = mentions[0], "edited"
        else:
            status[s.id] = "missing"
    unchanged = {i for s in specs for i, t in enumerate(trees) if t is not None and t == s.tree}
    params = f"mode = {mode!r}\nseed = {seed!r}  # injected by the grader"
    out, windows, since = [], {}, []
    for i, c in enumerate(cells):
        caps = [s for s in specs if where.get(s.id) == i]
        traced = i not in unchanged and (trees[i] is None or trees[i] not in known)
        if traced:
            since.append(len(out))
        out.append(
            {
                "source": "pass" if i in unchanged else c["source"],
                "origin": i + 1,
                "traced": traced,
                "capture": [{"id": s.id, "name": s.name, "kind": s.kind} for s in caps],
            }
        )
        for s in caps:
            if s.kind == "value":
                assigns = [
                    k for k, o in enumerate(out) if o["traced"] and s.name in _assigned(o["source"])
                ]
                windows[s.id] = sorted(set(since) | set(assigns))
        if caps:
            since = []
        if "parameters" in c["tags"]:
            out.append({"source": params, "capture": [], "origin": None, "traced": False})
    if not any("parameters" in c["tags"] for c in cells):
        out.insert(0, {"source": params, "capture": [], "origin": None, "traced": False})
        windows = {k: [i + 1 for i in v] for k, v in windows.items()}
    return out, status, windows
