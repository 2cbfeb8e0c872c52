"""The claims sweep: every chapter run at many seeds, every declared claim's outcome recorded.

A chapter's run checks its claims at one seed; the sentences speak for every draw of the chapter's
networks. The sweep runs each chapter (or the chapters named) in fast mode at seeds 0-9 and in
full mode at seeds 0-4 (fewer, never below 3, for the chapters :data:`FEWER_FULL_SEEDS` names,
for cost), in parallel up to the machine's cores (:class:`booktools.execute.Batch`: one process
and one torch thread per run), with ``RANKCOLLAPSE_SWEEP=1`` in the kernels' environment: a
false claim is recorded and the run goes on (``book/rankbook/evidence.py``). It collects every
claim's outcome at every seed (the glued ``claim.<name>`` records) and merges them into
:data:`RECORD` (``status/claims.json``), a chapter and mode at a time, with the commit, the
chapter's source hash (sha256 of ``chapters/<name>.md``), the seeds, each run's wall time and the
sweep's total. A run that fails for another reason than a claim is recorded as an error for that
seed (with the claims it declared before the error).

    python -m booktools.sweep                              # the whole book (or: rankbook-sweep)
    python -m booktools.sweep --chapters paths skip        # these chapters, merged into the record
    python -m booktools.sweep --fast-seeds 0-9 --full-seeds 0-4 --jobs 2

``tests/test_sweep.py`` reads the record: it covers every chapter of ``_toc.yml``, no chapter's
source has changed since it was swept, and a claim false at any seed of a scale it is checked at
declares the rate it holds at (``rate=``) or a narrower scale (``scale="full"``). The status
page shows each claim's held counts (``tools/booktools/ext/claimtable.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import BUILD, ROOT
from .execute import Batch
from .outputs import claim_records, glued_values
from .toc import toc_notebooks

# rankbook.evidence.SWEEP_ENV, named again (the tooling does not import the book layer)
SWEEP_ENV = "RANKCOLLAPSE_SWEEP"
RECORD = ROOT / "status" / "claims.json"
OUT = BUILD / "sweep"  # the sweep's executed notebooks, kept for inspection
MODES = ("fast", "full")
FAST_SEEDS = tuple(range(10))
FULL_SEEDS = tuple(range(5))
MIN_FULL_SEEDS = 3
#: Chapters swept at fewer full-mode seeds than the others, for cost: name -> (seeds, why). The
#: status page prints it. Never below :data:`MIN_FULL_SEEDS`.
FEWER_FULL_SEEDS = {
    "toy_tasks": (3, "it trains its networks at each seed: about 3 minutes a full-mode run"),
    "real_models": (3, "six transformers at each seed: about 2.5 minutes a full-mode run"),
    "at_depth": (3, "six transformers to 8 times their depth at published widths, per seed"),
    "lower_bound": (3, "10,000 random networks per bound and an adversarial search: minutes a run"),
}
COMMAND = "python -m booktools.sweep --chapters {chapter}"
KEEP_SWEEPS = 20  # invocations listed in the record


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-9"``, ``"0,2,5"``, ``"0-4,7"`` or ``""`` (none) as sorted distinct seeds."""
    seeds: set[int] = set()
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"seeds must read like 0-9 or 0,2,5, got {text!r}") from None
        if a < 0 or b < a:
            raise ValueError(f"seeds must be a range lo-hi with 0 <= lo <= hi, got {part!r}")
        seeds.update(range(a, b + 1))
    return tuple(sorted(seeds))


def full_seeds_of(chapter: str, seeds) -> tuple[int, ...]:
    """The full-mode seeds ``chapter`` is swept at: ``seeds``, or their first few for a chapter
    of :data:`FEWER_FULL_SEEDS`."""
    seeds = tuple(seeds)
    fewer = FEWER_FULL_SEEDS.get(chapter)
    if fewer is None:
        return seeds
    if fewer[0] < MIN_FULL_SEEDS:
        raise ValueError(f"FEWER_FULL_SEEDS[{chapter!r}] is below {MIN_FULL_SEEDS} seeds")
    return seeds[: max(fewer[0], MIN_FULL_SEEDS)]


def source_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def commit() -> str | None:
    """HEAD's hash, with ``+changes`` when tracked files differ from it; ``None`` outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _error(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    return f"{name}: {(value.strip().splitlines() or [''])[-1]}"[:300]


def _executed(path: Path):
    """The notebook papermill wrote (also when a cell failed: the cells before it are there)."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return None


def read(path: Path = RECORD) -> dict:
    if not Path(path).exists():
        return {"chapters": {}, "sweeps": []}
    record = json.loads(Path(path).read_text())
    if not isinstance(record.get("chapters"), dict):
        raise ValueError(f"{path}: not the claims sweep's record (an object with 'chapters')")
    record.setdefault("sweeps", [])
    return record


def write(record: dict, path: Path = RECORD) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def plan(paths, fast_seeds, full_seeds) -> dict:
    """The runs: ``{(chapter, mode, seed): (path, execute options)}``."""
    runs = {}
    for path in paths:
        chapter = Path(path).stem
        for mode, seeds in (("fast", fast_seeds), ("full", full_seeds_of(chapter, full_seeds))):
            for seed in seeds:
                name = f"{chapter}-{mode}-{seed}"
                runs[(chapter, mode, seed)] = (
                    Path(path),
                    {"mode": mode, "seed": seed, "out_dir": OUT, "name": name},
                )
    return runs


def run_batch(runs: dict, jobs: int | None, done) -> dict:
    """Execute ``runs`` in parallel with the sweep's environment (what :func:`sweep` calls)."""
    saved = os.environ.get(SWEEP_ENV)
    os.environ[SWEEP_ENV] = "1"  # the Batch's processes start now and keep it
    try:
        batch = Batch(runs, jobs)
    finally:
        if saved is None:
            os.environ.pop(SWEEP_ENV, None)
        else:
            os.environ[SWEEP_ENV] = saved
    return batch.wait(done)


def collect(runs: dict, made: dict, seconds: dict) -> dict:
    """The sweep's results per chapter and mode, from each run's executed notebook (or its error):
    ``{chapter: {mode: entry}}`` with the seeds, each run's seconds, the errors and each claim's
    outcome per seed; the declarations (section, scale, rate, sentence) under ``"declared"``."""
    out: dict = {}
    for (chapter, mode, seed), (_path, options) in runs.items():
        entry = out.setdefault(chapter, {}).setdefault(
            mode,
            {"seeds": [], "seconds": {}, "errors": {}, "claims": {}, "declared": {}},
        )
        entry["seeds"].append(seed)
        entry["seconds"][str(seed)] = round(seconds.get((chapter, mode, seed), 0.0), 1)
        result = made.get((chapter, mode, seed))
        nb = result
        if result is None or isinstance(result, BaseException):
            entry["errors"][str(seed)] = _error(result) if result else "the run did not end"
            nb = _executed(Path(options["out_dir"]) / f"{options['name']}.ipynb")
        for r in claim_records(glued_values(nb)) if nb is not None else ():
            entry["claims"].setdefault(r["name"], {})[str(seed)] = bool(r["holds"])
            entry["declared"][r["name"]] = {
                "section": r["section"],
                "scale": r["scale"],
                "rate": r.get("rate"),
                "sentence": r.get("sentence"),
            }
    return out


def merge(record: dict, results: dict, paths: dict, stamp: dict) -> dict:
    """``results`` (:func:`collect`) into ``record``: each chapter's swept modes replace what the
    record had for them; a mode not swept now is kept only if the chapter's source is unchanged
    since it was swept."""
    for chapter, modes in results.items():
        sha = source_hash(paths[chapter])
        old = record["chapters"].get(chapter, {})
        new = {m: e for m, e in old.items() if m in MODES and e.get("source_sha256") == sha}
        for mode, entry in modes.items():
            entry["seeds"] = sorted(entry["seeds"])
            new[mode] = {**entry, "source_sha256": sha, **stamp}
        record["chapters"][chapter] = new
    return record


def sweep(
    paths=None,
    fast_seeds=FAST_SEEDS,
    full_seeds=FULL_SEEDS,
    jobs: int | None = None,
    record_path: Path = RECORD,
    runner=run_batch,
    echo=print,
) -> dict:
    """Sweep the chapters at ``paths`` (default: every chapter of ``_toc.yml``) and merge the
    results into the record at ``record_path``; returns the record. ``runner(runs, jobs, done)``
    executes the runs (:func:`run_batch`; a test passes its own)."""
    paths = {Path(p).stem: Path(p) for p in (paths or toc_notebooks())}
    runs = plan(paths.values(), fast_seeds, full_seeds)
    if not runs:
        raise ValueError("nothing to sweep: no chapter, or no seed in either mode")
    seconds: dict = {}

    def done(key, took, error):
        seconds[key] = took
        chapter, mode, seed = key
        what = "ok" if error is None else f"ERROR {_error(error)}"
        echo(f"  {chapter} [{mode} {seed}] {took:.1f} s: {what}")

    echo(f"sweeping {len(runs)} runs of {len(paths)} chapters (jobs: {jobs or 'one per core'})")
    start, started = time.monotonic(), now()
    made = runner(runs, jobs, done)
    wall = round(time.monotonic() - start, 1)
    stamp = {"commit": commit(), "swept": now()}
    record = read(record_path)
    merge(record, collect(runs, made, seconds), paths, stamp)
    record["sweeps"] = [
        *record["sweeps"],
        {
            "started": started,
            "commit": stamp["commit"],
            "chapters": sorted(paths),
            "fast_seeds": list(fast_seeds),
            "full_seeds": list(full_seeds),
            "runs": len(runs),
            "jobs": jobs or len(os.sched_getaffinity(0)),
            "wall_seconds": wall,
        },
    ][-KEEP_SWEEPS:]
    write(record, record_path)
    echo(f"{len(runs)} runs in {wall:.1f} s; written to {record_path}")
    for chapter in paths:
        for mode, entry in record["chapters"][chapter].items():
            false = {
                name: [s for s, held in seeds.items() if not held]
                for name, seeds in entry["claims"].items()
                if not all(seeds.values())
            }
            echo(
                f"  {chapter} [{mode}] seeds {entry['seeds']}: {len(entry['claims'])} claims, "
                f"{sum(entry['seconds'].values()):.0f} s of runs"
                + (f"; errors at seeds {sorted(entry['errors'])}" if entry["errors"] else "")
                + "".join(f"\n    {n} false at seeds {', '.join(s)}" for n, s in false.items())
            )
    return record


# --------------------------------------------------------------------------- reading the record


def checked_modes(scale: str) -> tuple[str, ...]:
    """The modes a claim of ``scale`` is checked in (``"any"``: both; ``"full"``: full only)."""
    return MODES if scale == "any" else ("full",)


def declared(entry: dict) -> dict:
    """A chapter's claims as declared in its swept runs (full mode's declaration first)."""
    return {
        **entry.get("fast", {}).get("declared", {}),
        **entry.get("full", {}).get("declared", {}),
    }


def held(entry: dict, mode: str, name: str) -> tuple[int, int, list[int]]:
    """``(seeds where the claim held, seeds where it was declared, seeds where it was false)``."""
    seeds = entry.get(mode, {}).get("claims", {}).get(name, {})
    false = sorted(int(s) for s, ok in seeds.items() if not ok)
    return len(seeds) - len(false), len(seeds), false


def uncovered(record: dict, chapters) -> list[str]:
    """Chapters not swept at :data:`FAST_SEEDS`' count of fast seeds and their count of full
    seeds (:func:`full_seeds_of`), or with a run that failed: one line each."""
    out = []
    for chapter in chapters:
        entry = record.get("chapters", {}).get(chapter, {})
        need = {"fast": len(FAST_SEEDS), "full": len(full_seeds_of(chapter, FULL_SEEDS))}
        for mode, n in need.items():
            got = entry.get(mode, {})
            if len(set(got.get("seeds", ()))) < n:
                out.append(
                    f"{chapter}: swept at {len(got.get('seeds', ()))} {mode}-mode seeds, needs "
                    f"{n}: {COMMAND.format(chapter=chapter)}"
                )
            for seed, error in sorted(got.get("errors", {}).items()):
                out.append(f"{chapter}: the {mode}-mode run at seed {seed} failed: {error}")
    return out


def stale(record: dict, paths) -> list[str]:
    """Chapters whose source changed since they were swept (or never swept): one line each, with
    the command that sweeps them again."""
    out = []
    for path in paths:
        chapter, sha = Path(path).stem, source_hash(path)
        entry = record.get("chapters", {}).get(chapter, {})
        old = [m for m in MODES if entry.get(m, {}).get("source_sha256") != sha]
        if old:
            why = (
                "never swept"
                if not entry
                else f"its source changed since its {' and '.join(old)}-mode sweep"
            )
            out.append(f"{chapter}: {why}: {COMMAND.format(chapter=chapter)}")
    return out


def unstated_rates(record: dict) -> list[str]:
    """Claims false at some swept seed of a mode they are checked in that declare no rate, or a
    rate above the share they held at: one line each."""
    out = []
    for chapter, entry in sorted(record.get("chapters", {}).items()):
        for name, d in sorted(declared(entry).items()):
            for mode in checked_modes(d["scale"]):
                k, n, false = held(entry, mode, name)
                if k == n or (d.get("rate") is not None and k >= d["rate"] * n - 1e-9):
                    continue
                told = "no rate" if d.get("rate") is None else f"rate={d['rate']}"
                out.append(
                    f"{chapter}.{name} (section {d['section']}, scale {d['scale']!r}, {told}) "
                    f"held at {k}/{n} {mode}-mode seeds (false at {false}): state its rate in "
                    "the sentence and declare it (rate=), scope it (scale='full', or the depths "
                    "in words), or change its setting and say why"
                )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="rankbook-sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", nargs="+", metavar="NAME", help="chapters (default: all)")
    parser.add_argument("--fast-seeds", default="0-9", help="fast-mode seeds (default 0-9)")
    parser.add_argument("--full-seeds", default="0-4", help="full-mode seeds (default 0-4)")
    parser.add_argument("--jobs", type=int, help="runs at once (default: one per core)")
    parser.add_argument("--record", type=Path, default=RECORD, help=f"default {RECORD}")
    args = parser.parse_args(argv)
    chapters = {p.stem: p for p in toc_notebooks()}
    unknown = sorted(set(args.chapters or ()) - set(chapters))
    if unknown:
        parser.error(
            f"not chapters of _toc.yml: {', '.join(unknown)} (known: {', '.join(chapters)})"
        )
    paths = [chapters[c] for c in args.chapters] if args.chapters else list(chapters.values())
    record = sweep(
        paths, parse_seeds(args.fast_seeds), parse_seeds(args.full_seeds), args.jobs, args.record
    )
    errors = [
        f"{c} [{m}] seed {s}"
        for c in (p.stem for p in paths)
        for m, e in record["chapters"][c].items()
        for s in e["errors"]
    ]
    if errors:
        print(f"runs that failed (not a claim): {', '.join(errors)}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
