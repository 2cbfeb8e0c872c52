"""Measure the book's run times and write the status page's data.

For every chapter (notebook) in _toc.yml: execute it with papermill in ``fast`` and in ``full``
mode, as the tests do (``booktools.execute``), and time each run (kernel start included: what a
reader waits for). Then time the whole book build from a clean ``_build`` in both modes (fast:
the tests' build; full: the README's ``python3 tasks.py book``, twice: first from scratch, the toy
tasks' checkpoints trained into an empty cache of its own, then again with those checkpoints
cached, as a reader's second build finds them), and run the library benchmark
(``benchmarks/paths.py --json``). Record the machine, how much other work shared it during each
run (:class:`booktools.machine.OtherWork`), and each run's declared claims (whether
each held: the status page's table of claims shows the last full-mode run's). Everything goes to
``status/status.json``, and the table the status page includes to ``status/table.md`` (generated
from the JSON).

    python -m booktools.status                   # everything (many minutes: full mode everywhere)
    python -m booktools.status --chapters paths  # re-measure these chapters, merged into the JSON
    python -m booktools.status --chapters paths --modes fast --build --benchmark
    python -m booktools.status --build --modes full  # only the full book build
    python -m booktools.status --tests           # only the whole test session (tasks.py test)
    python -m booktools.status --render          # only rewrite status/table.md from the JSON

(or ``rankbook-status``, the same command). With ``--chapters``, ``--build`` or ``--benchmark``,
only what is named is measured (``--build`` alone: only the book build) and merged into the JSON.
A chapter that fails is recorded as failed (with the error's last line) and the command exits
non-zero after writing what it measured.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from booktools import ROOT
from booktools.build import build
from booktools.execute import execute
from booktools.machine import BUSY_CORES, OtherWork, facts
from booktools.outputs import claim_records, glued_values
from booktools.timings import STATUS_JSON, read
from booktools.toc import chapter_key, toc_notebooks

JSON_PATH = STATUS_JSON
STATUS_DIR = JSON_PATH.parent
TABLE_PATH = STATUS_DIR / "table.md"
MODES = ("fast", "full")
TESTS_LOG = ROOT / "_build" / "status" / "tests.log"  # the last timed test session's output


def now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------- measurements


def chapter_title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def time_chapter(path: Path, mode: str) -> dict:
    """Execute one chapter with papermill in ``mode``, from an empty checkpoint cache of its own
    (a reader's first run: the networks a chapter trains are trained); seconds, or the error."""
    out_dir = ROOT / "_build" / "status" / mode  # not _build/papermill: the tests compare those
    print(f"  {chapter_key(path)} [{mode}] ...", end="", flush=True)
    t = time.perf_counter()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="rankcollapse-cache-") as cache,
            checkpoint_cache(Path(cache)),
            OtherWork() as other,
        ):
            nb = execute(path, mode=mode, out_dir=out_dir)
    except Exception as exc:  # noqa: BLE001  (a failing chapter is a measurement too)
        seconds = time.perf_counter() - t
        last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
        print(f" FAILED after {seconds:.1f} s: {last}")
        return {"seconds": None, "ok": False, "error": last, "measured": now(), "cache": "empty"}
    seconds = time.perf_counter() - t
    print(f" {seconds:.1f} s")
    return {
        "seconds": round(seconds, 1),
        "ok": True,
        "measured": now(),
        "others": other.cores,
        "cache": "empty",
        "claims": claims_of(nb),
    }


def claims_of(nb) -> dict[str, dict]:
    """The claims an executed chapter declared: name -> whether this run checked it and whether it
    held (a checked claim that does not hold stops the run, so a finished run's checked claims
    held)."""
    return {
        r["name"]: {"checked": bool(r["checked"]), "holds": bool(r["holds"])}
        for r in claim_records(glued_values(nb))
    }


CACHE_ENV = "RANKCOLLAPSE_CACHE"  # the toy tasks' checkpoint cache (rankcollapse.toy.train)


@contextlib.contextmanager
def checkpoint_cache(cache: Path | None):
    """``$RANKCOLLAPSE_CACHE`` set to ``cache`` inside the block (the chapters' kernels inherit
    it), the reader's own value back after it; None: the reader's cache, as it is. Yields the
    cache's state before the run: ``"trained"`` when it held no checkpoint (the run trains the
    networks: from scratch), ``"cached"`` when it held some, None for the reader's cache."""
    if cache is None:
        yield None
        return
    saved = os.environ.get(CACHE_ENV)
    state = "cached" if any(Path(cache).rglob("*.pt")) else "trained"
    os.environ[CACHE_ENV] = str(cache)
    try:
        yield state
    finally:
        os.environ.pop(CACHE_ENV, None)
        if saved is not None:
            os.environ[CACHE_ENV] = saved


def time_book_build(mode: str, cache: Path | None = None) -> dict:
    """A whole book build from a clean _build in ``mode``: ``fast`` is the tests' build, ``full``
    the README's ``python3 tasks.py book`` (without its install step). ``cache``: the toy tasks'
    checkpoint cache the build uses (:func:`checkpoint_cache`); its state before the build is
    recorded as ``"toy"``."""
    label = f"{mode}, " + ("the reader's cache" if cache is None else "cache " + str(cache))
    print(f"  book build [{label}] ...", end="", flush=True)
    with checkpoint_cache(cache) as toy, OtherWork() as other:
        t = time.perf_counter()
        ok = build(mode, out=io.StringIO()) == 0
        seconds = time.perf_counter() - t
    print(f" {seconds:.1f} s" + ("" if ok else " (FAILED)"))
    return {
        "mode": mode,
        "seconds": round(seconds, 1),
        "ok": ok,
        "toy": toy,
        "measured": now(),
        "others": other.cores,
    }


_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected)")


def time_test_session() -> dict:
    """The README's ``python3 tasks.py test`` (its install step included, a no-op when the pinned
    versions are present): every test, every chapter's runs, the book built, the browser."""
    from booktools.pdf import missing_tools

    print("  test session (python3 tasks.py test) ...", end="", flush=True)
    tex = not missing_tools()  # without TeX the PDF tests skip (as in CI)
    t = time.perf_counter()
    with OtherWork() as other:
        result = subprocess.run(
            [sys.executable, str(ROOT / "tasks.py"), "test", "-q", "-p", "no:cacheprovider"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    seconds = time.perf_counter() - t
    TESTS_LOG.parent.mkdir(parents=True, exist_ok=True)
    TESTS_LOG.write_text(result.stdout + result.stderr)  # what failed, when something did
    last = ([ln for ln in result.stdout.splitlines() if " in " in ln and "passed" in ln] or [""])[
        -1
    ]
    counts = {kind.rstrip("s"): int(n) for n, kind in _SUMMARY.findall(last)}
    ok = result.returncode == 0
    print(f" {seconds:.1f} s" + ("" if ok else f" (FAILED: the output is in {TESTS_LOG})"))
    return {
        "seconds": round(seconds, 1),
        "ok": ok,
        "counts": counts,
        "tex": tex,
        "measured": now(),
        "others": other.cores,
    }


def run_benchmark() -> dict:
    """``benchmarks/paths.py --json``: the library's headline timings."""
    print("  benchmarks/paths.py ...", end="", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "paths.json"
        result = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "paths.py"), "--json", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if result.returncode or not out.exists():
            print(" FAILED")
            return {
                "ok": False,
                "error": (result.stderr.strip().splitlines() or ["?"])[-1],
                "measured": now(),
            }
        data = json.loads(out.read_text())
    print(" done")
    return {"ok": True, "measured": now(), "paths": data}


# --------------------------------------------------------------------------- the page


def fmt_seconds(entry: dict | None) -> str:
    if not entry:
        return "not measured"
    if not entry.get("ok"):
        return "**failed**"
    s = entry["seconds"]
    return f"{s:.0f} s" if s < 100 else f"{s / 60:.1f} min"


def day(stamp: str | None) -> str:
    """The date of a timestamp, with non-breaking hyphens (a table cell must not wrap it)."""
    return stamp[:10].replace("-", "\u2011") if stamp else "?"


def _shared(run: dict) -> bool:
    """Whether other work kept more than :data:`BUSY_CORES` cores busy during ``run``."""
    return (run.get("others") or 0) > BUSY_CORES


def render(status: dict) -> str:
    """The status page's table and notes, as MyST markdown (included by status.md)."""
    m = status.get("machine", {})
    lines = [
        "<!-- Generated by tools/booktools/status.py from status/status.json; do not edit by "
        "hand. -->",
        "",
        f"Measured on **{m.get('cpu', '?')}, {m.get('cores', '?')} cores**, {m.get('os', '?')}, "
        f"Python {m.get('python', '?')}, torch {m.get('torch', '?')}, jupyter-book "
        f"{m.get('jupyter-book', '?')}; "
        f"last updated **{status.get('updated', '?').replace('T', ' ').replace('Z', ' UTC')}**. "
        "Each chapter's row gives the date of its own measurement.",
        "",
        "| chapter | fast mode | full mode | measured |",
        "|---|--:|--:|---|",
    ]
    for key, entry in status.get("chapters", {}).items():
        runs = entry.get("runs", {})
        dates = sorted({day(r.get("measured")) for r in runs.values()})
        # plain text, not a {doc} link: a chapter that leaves the toc must not break the build
        lines.append(
            f"| {entry.get('title', key)} (`{key}.md`) | {fmt_seconds(runs.get('fast'))} "
            f"| {fmt_seconds(runs.get('full'))} | {', '.join(dates) or '?'} |"
        )
    builds = status.get("book_builds", {})
    # a full build in the reader's cache (earlier versions of this script) may have trained
    full_cached = builds.get("full", {}).get("toy") == "cached"
    if builds:
        dates = sorted({day(b.get("measured")) for b in builds.values()})
        cached = " (full mode: the toy tasks' checkpoints cached)" * full_cached
        lines.append(
            f"| *the whole book (clean `_build`, every chapter executed, HTML written){cached}* "
            f"| {fmt_seconds(builds.get('fast'))} | {fmt_seconds(builds.get('full'))} | "
            f"{', '.join(dates)} |"
        )
        if "full-scratch" in builds:
            lines.append(
                "| *the whole book from scratch (the toy tasks' checkpoints trained first)* | "
                f"| {fmt_seconds(builds['full-scratch'])} "
                f"| {day(builds['full-scratch'].get('measured'))} |"
            )
    tests = status.get("test_session")
    if tests:
        counts = ", ".join(f"{n} {kind}" for kind, n in tests.get("counts", {}).items())
        no_tex = "; no TeX on the machine: the PDF tests skipped" * (tests.get("tex") is False)
        lines.append(
            f"| *the whole test session (`python3 tasks.py test`{': ' + counts if counts else ''}"
            f"{no_tex})* | {fmt_seconds(tests)} | | {day(tests.get('measured'))} |"
        )
    runs = [r for e in status.get("chapters", {}).values() for r in e.get("runs", {}).values()]
    if runs and all(r.get("cache") == "empty" for r in runs):
        lines += [
            "",
            "Each chapter's runs start from an empty checkpoint cache, as a reader's first run "
            "does: the networks a chapter trains are trained"
            + (" (the whole book's full-mode row has them cached)" if full_cached else "")
            + ".",
        ]
    runs += list(builds.values()) + ([tests] if tests else [])
    shared = [r["others"] for r in runs if _shared(r)]
    busy = [  # records from before other work was measured: the load average at their end
        r["load"]
        for r in runs
        if r.get("others") is None
        and r.get("load") is not None
        and r["load"] > (m.get("cores") or 1)
    ]
    if shared:
        lines += [
            "",
            f"{len(shared)} of these runs shared the machine with other work (on average up to "
            f"{max(shared):.2f} of its {m.get('cores', '?')} cores busy with it): those times "
            "are upper bounds.",
        ]
    if busy:
        lines += [
            "",
            f"{len(busy)} of these runs (measured before other work was) ended with a load "
            f"average above the machine's {m.get('cores', '?')} cores (up to {max(busy):.1f}): "
            "they may have shared the machine, and their times may be upper bounds.",
        ]
    measured = [r["others"] for r in runs if r.get("others") is not None]
    if measured and not shared:
        lines += [
            "",
            f"Other work kept at most {max(measured):.2f} of the machine's cores busy, on "
            f"average, during the {len(measured)} runs that measured it "
            "(`booktools.machine.OtherWork`).",
        ]
    cached_build = builds["full"] if full_cached else None
    targets = [
        (what, entry, limit)
        for what, entry, limit in (
            ("the test session", tests, 8),
            ("the full book with the toy checkpoints cached", cached_build, 5),
            ("the full book from scratch", builds.get("full-scratch"), 10),
        )
        if entry
    ]
    if targets:

        def verdict(entry, limit):
            if not entry.get("ok"):
                return "failed"
            if entry["seconds"] < 60 * limit:
                return "met"
            return "missed" + ", on a machine shared with other work" * _shared(entry)

        said = [
            f"{what} under {limit} minutes ({verdict(entry, limit)})"
            for what, entry, limit in targets
        ]
        other = (
            f" (these were measured on {m.get('cores', '?')} cores: the verdicts do not apply)"
            if m.get("cores") != 2
            else ""
        )
        lines += ["", "Targets, on an idle 2-core machine: " + "; ".join(said) + "." + other]
    if status.get("note"):
        lines += ["", status["note"]]
    failures = [
        (k, mode, r.get("error", ""))
        for k, e in status.get("chapters", {}).items()
        for mode, r in e.get("runs", {}).items()
        if not r.get("ok")
    ]
    if failures:
        lines += ["", "Failed runs:", ""]
        lines += [f"- `{k}` in {mode} mode: `{err}`" for k, mode, err in failures]
    bench = status.get("benchmark", {})
    if bench.get("ok"):
        b = bench["paths"]
        lines += [
            "",
            f"**Library benchmark** (`benchmarks/paths.py`, {day(bench.get('measured'))}; "
            f"{b.get('machine', '')}):",
            "",
            f"- float32 matrix multiply: {b['matmul_gflops']:.0f} GFLOP/s.",
            f"- `rc.paths.decompose_by_length` at BERT-base's shape (12 layers, 12 heads, "
            f"128 tokens, width 768, float32): {b['dp_L12_H12_seconds']:.2f} s for "
            f"{b['dp_L12_H12_gflop']:.1f} GFLOP "
            f"(target: under 2 s, {'met' if b['dp_L12_H12_seconds'] < 2 else 'missed'}).",
            f"- 6 layers, 3 heads (4,096 paths), per-length sums agreeing to "
            f"{b['agreement']:.0e} (relative): the dynamic programme takes "
            f"{b['dp_L6_H3_seconds'] * 1000:.0f} ms; building every path's term on its own "
            f"takes {b['term_by_term_L6_H3_seconds']:.2f} s, {b['ratio']:.0f} times longer "
            f"(target: 100 times, {'met' if b['ratio'] >= 100 else 'missed'}); "
            "`rc.paths.enumerate_paths`, which shares each path's prefix with its extensions, "
            f"takes {b['enum_L6_H3_seconds']:.2f} s, {b['ratio_tree']:.0f} times longer (by "
            "arithmetic alone 65 times: 4,095 single-head applications against 63; the rest is "
            "per-path overhead).",
        ]
    elif bench:
        lines += ["", f"**Library benchmark**: failed (`{bench.get('error', '')}`)."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


def load() -> dict:
    return read(JSON_PATH)


def save(status: dict) -> None:
    STATUS_DIR.mkdir(exist_ok=True)
    tmp = JSON_PATH.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(status, indent=2) + "\n")
    tmp.replace(JSON_PATH)
    TABLE_PATH.write_text(render(status))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument(
        "--chapters",
        nargs="+",
        metavar="NAME",
        help="only these chapters (file stems in _toc.yml, e.g. paths); default: all",
    )
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument(
        "--build",
        action="store_true",
        help="time the whole book build in each of --modes (with --chapters: as well)",
    )
    ap.add_argument(
        "--benchmark",
        action="store_true",
        help="run benchmarks/paths.py (with --chapters: as well)",
    )
    ap.add_argument(
        "--tests",
        action="store_true",
        help="time the whole test session, python3 tasks.py test (with --chapters: as well)",
    )
    ap.add_argument(
        "--render", action="store_true", help="only rewrite status/table.md from the JSON"
    )
    args = ap.parse_args(argv)

    try:
        status = load()
    except ValueError as err:
        print(f"status: error: {err}", file=sys.stderr)
        return 2
    if args.render:
        save(status)
        return 0

    do_all = not (args.chapters or args.build or args.benchmark or args.tests)
    toc = toc_notebooks()
    chapters = toc if do_all else []
    if args.chapters:
        by_name = {p.stem: p for p in toc} | {chapter_key(p): p for p in toc}
        unknown = [c for c in args.chapters if c not in by_name]
        if unknown:
            ap.error(
                f"not a chapter in _toc.yml: {', '.join(unknown)} (known: "
                f"{', '.join(p.stem for p in toc)})"
            )
        chapters = [by_name[c] for c in args.chapters]

    status["machine"] = facts()
    if do_all:
        status.pop("note", None)  # a remark about earlier, partial measurements
    # keep the toc's order; drop chapters that left the toc
    toc_keys = [chapter_key(p) for p in toc]
    old = status.get("chapters", {})
    status["chapters"] = {k: old[k] for k in toc_keys if k in old}
    ok = True
    print(f"Measuring on {status['machine']['cpu']} ({status['machine']['cores']} cores):")
    for path in chapters:
        key = chapter_key(path)
        entry = status["chapters"].setdefault(key, {"runs": {}})
        entry["title"] = chapter_title(path)
        for mode in args.modes:
            entry["runs"][mode] = run = time_chapter(path, mode)
            entry["runs"][mode]["machine"] = (
                f"{status['machine']['cpu']}, {status['machine']['cores']} cores"
            )
            ok &= run["ok"]
            status["updated"] = now()
            save(status)  # after every run: an interrupted refresh keeps what it measured
    status["chapters"] = {k: status["chapters"][k] for k in toc_keys if k in status["chapters"]}
    if do_all or args.benchmark:
        status["benchmark"] = run_benchmark()
        ok &= status["benchmark"]["ok"]
    if do_all or args.build:
        status.pop("book_build", None)  # the fast-only record of earlier versions of this script
        builds = status.setdefault("book_builds", {})
        for mode in args.modes:
            if mode == "fast":
                builds[mode] = time_book_build(mode)
                ok &= builds[mode]["ok"]
                save(status)
                continue
            # full: from scratch into an empty cache, then again with what it trained
            with tempfile.TemporaryDirectory(prefix="rankcollapse-cache-") as cache:
                for key in (f"{mode}-scratch", mode):
                    builds[key] = time_book_build(mode, cache=Path(cache))
                    ok &= builds[key]["ok"]
                    save(status)
    if do_all or args.tests:
        status["test_session"] = time_test_session()
        ok &= status["test_session"]["ok"]
    status["updated"] = now()
    save(status)
    print(f"wrote {JSON_PATH} and {TABLE_PATH}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
