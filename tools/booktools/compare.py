"""A chapter's results written to JSON, and two such files compared: does a change keep them?

    python -m booktools.compare record before.json           # execute every chapter (fast, seed 0)
    python -m booktools.compare record after.json --chapters paths skip --mode full --seed 1
    python -m booktools.compare record built.json --from _build/jupyter_execute/chapters
    python -m booktools.compare compare before.json after.json  # numbers within 1e-12 (relative)

(``rankbook-compare`` is the same command.)

``record`` executes the chapters of _toc.yml with papermill (or reads already executed notebooks,
``<name>.ipynb``, from a folder) and writes, per chapter, its glued values, printed text and
figure digests (:func:`booktools.outputs.results`). ``compare`` lists every difference by
chapter and name and exits 1 when there is one (it says so first when the two runs' mode or seed
differ: comparing seeds shows what a chapter draws at random).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from .outputs import differences, read_executed, results
from .toc import chapter_key, toc_notebooks


def record(chapters=None, mode: str = "fast", seed: int = 0, from_dir: Path | None = None) -> dict:
    """Every chapter's (or those named by stem) results, with the run's mode and seed."""
    from .execute import execute

    toc = toc_notebooks()
    if chapters:
        unknown = set(chapters) - {p.stem for p in toc}
        if unknown:
            raise ValueError(f"not a chapter in _toc.yml: {', '.join(sorted(unknown))}")
        toc = [p for p in toc if p.stem in chapters]
    out = {
        "mode": mode,
        "seed": seed,
        "source": str(from_dir) if from_dir else "papermill",
        "chapters": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for path in toc:
            if from_dir is not None:
                nb = read_executed(Path(from_dir) / (path.stem + ".ipynb"))
            else:
                print(
                    f"  executing {chapter_key(path)} ({mode}, seed {seed}) ...",
                    file=sys.stderr,
                    flush=True,
                )
                nb = execute(path, mode=mode, seed=seed, out_dir=Path(tmp))
            out["chapters"][chapter_key(path)] = results(nb)
    return out


def compare(a: dict, b: dict, rtol: float = 1e-12) -> list[str]:
    """Every difference between two records, ``"<chapter>: <difference>"``."""
    found = []
    for key in sorted(set(a["chapters"]) | set(b["chapters"])):
        if key not in a["chapters"] or key not in b["chapters"]:
            found.append(f"{key}: only in the {'first' if key in a['chapters'] else 'second'}")
            continue
        found += [f"{key}: {d}" for d in differences(a["chapters"][key], b["chapters"][key], rtol)]
    return found


def _read_record(parser: argparse.ArgumentParser, path: Path) -> dict:
    """The record in ``path``, or a one-line usage error (exit 2) naming the file when it is
    missing, unreadable, not JSON, or not a record written by ``record``."""
    if path.is_dir():
        parser.error(
            f"{path}: a folder, not a record (compare takes two JSON files written by record)"
        )
    if not path.is_file():
        parser.error(f"{path}: no such file (compare takes two JSON files written by record)")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        parser.error(f"{path}: not a JSON file ({exc})")
    missing = [
        k for k in ("mode", "seed", "chapters") if not isinstance(data, dict) or k not in data
    ]
    what = (
        f"it lacks {', '.join(repr(k) for k in missing)}"
        if missing
        else "its 'chapters' is not a mapping"
        if not isinstance(data["chapters"], dict)
        else _malformed(data["chapters"])
    )
    if what:
        parser.error(f"{path}: not a record written by `record` ({what})")
    return data


def _malformed(chapters: dict) -> str | None:
    """What is wrong with a record's chapters (``None``: each has the shape ``results`` writes:
    ``glue`` {name: {mime: text}}, ``text`` [[line, ...], ...], ``figures`` {key: {...}})."""

    def texts(x):
        return isinstance(x, dict) and all(isinstance(v, str) for v in x.values())

    for key, c in chapters.items():
        if not isinstance(c, dict):
            return f"chapter {key!r} is a {type(c).__name__}, not a mapping"
        glue, text, figures = c.get("glue", {}), c.get("text", []), c.get("figures", {})
        if not (isinstance(glue, dict) and all(texts(v) for v in glue.values())):
            return f"chapter {key!r}: 'glue' is not a mapping of name to {{mime: text}}"
        if not (
            isinstance(text, list)
            and all(
                isinstance(cell, list) and all(isinstance(t, str) for t in cell) for cell in text
            )
        ):
            return f"chapter {key!r}: 'text' is not a list of lists of lines"
        if not (isinstance(figures, dict) and all(isinstance(v, dict) for v in figures.values())):
            return f"chapter {key!r}: 'figures' is not a mapping of key to digest"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="write the chapters' results to a JSON file")
    rec.add_argument("out", type=Path)
    rec.add_argument(
        "--chapters", nargs="+", metavar="NAME", help="file stems in _toc.yml (default: all)"
    )
    rec.add_argument("--mode", choices=("fast", "full"), default="fast")
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        metavar="DIR",
        help="read executed notebooks <DIR>/<name>.ipynb instead of executing",
    )
    cmp = sub.add_parser("compare", help="compare two JSON files written by record")
    cmp.add_argument("first", type=Path)
    cmp.add_argument("second", type=Path)
    cmp.add_argument(
        "--rtol", type=float, default=1e-12, help="relative tolerance on numbers (default 1e-12)"
    )
    args = ap.parse_args(argv)
    if args.command == "record":
        if not 0 <= args.seed < 2**32:
            rec.error(f"--seed must be in [0, 2**32), got {args.seed}")
        if args.out.is_dir():
            rec.error(f"{args.out} is a folder: give the JSON file to write the record to")
        above = next((p for p in args.out.resolve().parents if p.exists()), None)
        if above is not None and not above.is_dir():
            rec.error(f"{args.out}: {above} is a file, not a folder")
        if not args.out.resolve().parent.is_dir():
            rec.error(f"{args.out}: the folder {args.out.parent} does not exist")
        if args.from_dir is not None and not args.from_dir.is_dir():
            why = "is not a folder" if args.from_dir.exists() else "does not exist"
            rec.error(
                f"--from {args.from_dir} {why} "
                "(it should be a folder of executed notebooks <name>.ipynb)"
            )
        try:
            data = record(args.chapters, args.mode, args.seed, args.from_dir)
        except ValueError as exc:
            ap.error(str(exc))
        except FileNotFoundError as exc:
            if args.from_dir is None:
                raise
            rec.error(
                f"--from {args.from_dir}: no executed notebook "
                f"{Path(exc.filename or '?').name} there"
            )
        try:
            args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        except OSError as exc:
            rec.error(f"{args.out}: cannot be written ({exc.strerror or exc})")
        print(f"wrote {args.out}: {len(data['chapters'])} chapter(s)")
        return 0
    if not (math.isfinite(args.rtol) and args.rtol >= 0):
        cmp.error(f"--rtol must be a finite number >= 0 (a relative tolerance), got {args.rtol:g}")
    a, b = (_read_record(cmp, p) for p in (args.first, args.second))
    if (a["mode"], a["seed"]) != (b["mode"], b["seed"]):
        print(
            f"note: the runs differ: mode {a['mode']}, seed {a['seed']} against mode "
            f"{b['mode']}, seed {b['seed']}"
        )
    found = compare(a, b, args.rtol)
    for line in found:
        print(line)
    n = sum(
        len(c.get("glue", {})) + sum(map(len, c.get("text", []))) + len(c.get("figures", {}))
        for c in a["chapters"].values()
    )
    print(
        f"{len(found)} difference(s) in {len(a['chapters'])} chapter(s), {n} values, lines and "
        f"figures compared (relative tolerance {args.rtol:g})"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
