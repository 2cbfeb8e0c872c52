"""The status page's data: status/status.json lists every chapter of _toc.yml with both timings.

The page itself (status.md, which includes status/table.md) is built by the book-build test.
When a chapter is added to _toc.yml, measure it: ``python -m booktools.status --chapters <name>``.
"""

import json
import os
from pathlib import Path

import pytest

from booktools import ROOT
from booktools import status as script
from booktools.toc import chapter_key, toc_files, toc_notebooks

STATUS_JSON = ROOT / "status" / "status.json"


class NoOtherWork:
    """booktools.machine.OtherWork stand-in: the real one makes its process the subreaper of its
    descendants and reaps them, which a test worker holding children of its own (the chapter
    pool, the browser) must not do; tests/test_machine.py measures in a child interpreter."""

    cores, own = 0.0, 0.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture(autouse=True)
def _no_reaping_in_the_test_worker(monkeypatch):
    monkeypatch.setattr(script, "OtherWork", NoOtherWork)


@pytest.fixture(scope="module")
def status():
    assert STATUS_JSON.exists(), "no status/status.json: run python -m booktools.status"
    return json.loads(STATUS_JSON.read_text())


def test_every_chapter_has_both_timings(status):
    missing = []
    for path in toc_notebooks():
        key = chapter_key(path)
        runs = status.get("chapters", {}).get(key, {}).get("runs", {})
        for mode in ("fast", "full"):
            run = runs.get(mode)
            if not run:
                missing.append(f"{key} [{mode}]: not measured")
            elif not run.get("ok"):
                missing.append(f"{key} [{mode}]: failed ({run.get('error')})")
            else:
                assert run["seconds"] > 0 and run["measured"], (key, mode, run)
    assert not missing, (
        "status/status.json is out of date; run python -m booktools.status --chapters "
        + " ".join(sorted({m.split()[0].split("/")[-1] for m in missing}))
        + "\n"
        + "\n".join(missing)
    )


def test_no_chapter_outside_the_toc(status):
    keys = {chapter_key(p) for p in toc_notebooks()}
    assert set(status.get("chapters", {})) <= keys


def test_records_when_and_on_what(status):
    machine = status["machine"]
    assert machine["cpu"] and machine["cores"] and machine["torch"]
    assert status["updated"]
    for mode in ("fast", "full"):
        build = status.get("book_builds", {}).get(mode, {})
        assert build.get("ok") and build["seconds"] > 0, (
            f"time the {mode} book build: --build --modes {mode}"
        )
    assert status["benchmark"]["ok"] and "dp_L12_H12_seconds" in status["benchmark"]["paths"]


def test_page_shows_the_json():
    """status/table.md is generated from the JSON (``--render``) and status.md includes it."""
    status = json.loads(STATUS_JSON.read_text())
    assert (ROOT / "status" / "table.md").read_text() == script.render(status), (
        "status/table.md is stale: python -m booktools.status --render"
    )
    assert "status" in toc_files()
    assert "{include} status/table.md" in (ROOT / "status.md").read_text()


def test_refreshing_a_subset_merges(tmp_path, monkeypatch):
    """--chapters re-measures only the chapters named and keeps every other entry."""
    monkeypatch.setattr(script, "STATUS_DIR", tmp_path)
    monkeypatch.setattr(script, "JSON_PATH", tmp_path / "status.json")
    monkeypatch.setattr(script, "TABLE_PATH", tmp_path / "table.md")
    chapters = toc_notebooks()
    keys = [script.chapter_key(p) for p in chapters]
    old = {
        "chapters": {
            k: {
                "title": k,
                "runs": {
                    m: {"seconds": 1.0, "ok": True, "measured": "old"} for m in ("fast", "full")
                },
            }
            for k in keys
        }
    }
    (tmp_path / "status.json").write_text(json.dumps(old))
    calls = []

    def fake_time(path, mode):
        calls.append((path.stem, mode))
        return {"seconds": 2.0, "ok": True, "measured": "new"}

    monkeypatch.setattr(script, "time_chapter", fake_time)
    assert script.main(["--chapters", chapters[0].stem, "--modes", "fast"]) == 0
    new = json.loads((tmp_path / "status.json").read_text())
    assert calls == [(chapters[0].stem, "fast")]
    assert new["chapters"][keys[0]]["runs"]["fast"]["measured"] == "new"
    assert new["chapters"][keys[0]]["runs"]["full"]["measured"] == "old"
    for k in keys[1:]:
        assert new["chapters"][k] == old["chapters"][k]
    assert list(new["chapters"]) == keys  # the toc's order
    assert (tmp_path / "table.md").read_text() == script.render(new)
    with pytest.raises(SystemExit):
        script.main(["--chapters", "no-such-chapter"])


def test_build_alone_measures_only_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(script, "STATUS_DIR", tmp_path)
    monkeypatch.setattr(script, "JSON_PATH", tmp_path / "status.json")
    monkeypatch.setattr(script, "TABLE_PATH", tmp_path / "table.md")
    done = []
    monkeypatch.setattr(script, "time_chapter", lambda path, mode: done.append("chapter"))
    monkeypatch.setattr(script, "run_benchmark", lambda: done.append("benchmark"))
    seconds = {"fast": 3.0, "full": 290.0}

    def fake_build(mode, cache=None):
        toy = None if cache is None else ("cached" if any(cache.iterdir()) else "trained")
        done.append((mode, toy))
        if cache is not None:
            (cache / "toy.pt").write_text("a checkpoint")  # what a build from scratch leaves
        extra = 400.0 if toy == "trained" else 0.0
        return {"mode": mode, "seconds": seconds[mode] + extra, "ok": True, "toy": toy}

    monkeypatch.setattr(script, "time_book_build", fake_build)
    assert script.main(["--build"]) == 0
    # fast in the reader's cache; full from scratch (an empty cache), then with what it trained
    assert done == [("fast", None), ("full", "trained"), ("full", "cached")]
    builds = json.loads((tmp_path / "status.json").read_text())["book_builds"]
    assert builds["fast"]["seconds"] == 3.0
    assert (builds["full"]["seconds"], builds["full-scratch"]["seconds"]) == (290.0, 690.0)
    table = (tmp_path / "table.md").read_text()
    assert "toy tasks' checkpoints cached)* | 3 s | 4.8 min |" in table
    assert "from scratch (the toy tasks' checkpoints trained first)* | | 11.5 min |" in table
    # the targets' verdicts, from the numbers (the machine's cores are this machine's)
    cores = os.cpu_count()
    targets = [line for line in table.splitlines() if line.startswith("Targets")]
    assert targets == [
        "Targets, on an idle 2-core machine: the full book with the toy checkpoints cached under "
        "5 minutes (met); the full book from scratch under 10 minutes (missed)."
        + ("" if cores == 2 else f" (these were measured on {cores} cores: the verdicts do not")
        + ("" if cores == 2 else " apply)")
    ]


def test_a_book_build_uses_the_cache_it_is_given_and_records_its_state(tmp_path, monkeypatch):
    """``time_book_build(mode, cache)``: the build (and the kernels, which inherit the
    environment) sees ``$RANKCOLLAPSE_CACHE`` = ``cache``; the reader's own value is back after
    it; an empty cache is recorded as trained, one holding a checkpoint as cached."""
    seen = []
    monkeypatch.setenv("RANKCOLLAPSE_CACHE", "the-readers")
    monkeypatch.setattr(
        script, "build", lambda mode, out: seen.append(os.environ["RANKCOLLAPSE_CACHE"]) or 0
    )
    first = script.time_book_build("full", cache=tmp_path)
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "sorting-abc.pt").write_text("x")
    second = script.time_book_build("full", cache=tmp_path)
    assert seen == [str(tmp_path)] * 2 and os.environ["RANKCOLLAPSE_CACHE"] == "the-readers"
    assert (first["toy"], second["toy"]) == ("trained", "cached")
    assert script.time_book_build("fast")["toy"] is None and seen[-1] == "the-readers"


def test_a_run_records_the_claims_it_declared():
    """booktools.status keeps each run's declared claims (the status page's "last full run")."""
    import nbformat

    from rankbook.evidence import Claim

    claims = [
        Claim(
            "paths",
            "falls",
            "4",
            "It falls.",
            "x < 1",
            True,
            "any",
            "fast",
            0,
            {"x": 0.5},
            "seed 0",
        ),
        Claim(
            "paths", "cubic", "5", "It is cubic.", "slope in (2.5, 3.5)", True, "full", "fast", 0
        ),
    ]
    nb = nbformat.v4.new_notebook()
    outputs = [
        nbformat.v4.new_output(
            "display_data",
            {"text/plain": c.json()},
            metadata={"scrapbook": {"name": "claim." + c.name, "mime_prefix": ""}},
        )
        for c in claims
    ]
    nb.cells.append(nbformat.v4.new_code_cell("", outputs=outputs))
    recorded = script.claims_of(nb)
    assert recorded == {
        "falls": {"checked": True, "holds": True},
        "cubic": {"checked": False, "holds": True},
    }


def _claim_record(name, holds=True, scale="any", rate=None, mode="fast", checked=True):
    return {
        "name": name,
        "holds": holds,
        "scale": scale,
        "rate": rate,
        "mode": mode,
        "seed": 0,
        "checked": checked,
        "section": "2",
        "sentence": "it falls",
        "condition": "x < 1",
        "evidence": "seeds 0-9",
    }


def test_the_claims_list_shows_the_sweeps_counts_compactly():
    """Issue 43, part 4: each claim's held counts from the sweep ("10/10 fast, 5/5 full"), with
    its scale or its rate, and what this build found."""
    from booktools.ext import claimtable

    entry = {
        "fast": {"claims": {"falls": {str(s): s != 7 for s in range(10)}, "u": {"0": False}}},
        "full": {"claims": {"falls": {str(s): True for s in range(5)}, "u": {"0": True}}},
    }
    assert claimtable.counts(entry, _claim_record("falls")) == "9/10 fast, 5/5 full"
    assert (
        claimtable.counts(entry, _claim_record("falls", rate=0.9))
        == "states ≥ 90% of draws: 9/10 fast, 5/5 full"
    )
    assert (
        claimtable.counts(entry, _claim_record("u", scale="full"))
        == "full mode only: 0/1 fast (not checked), 1/1 full"
    )
    assert claimtable.counts(None, _claim_record("falls")) == "not swept"
    assert claimtable.counts(entry, _claim_record("new")) == "not in the sweep's runs"
    assert claimtable.this_build(_claim_record("falls")) == "this build (fast, seed 0): held"
    assert claimtable.this_build(
        _claim_record("u", holds=False, scale="full", checked=False)
    ).endswith("not checked (false)")


def test_the_claims_list_quotes_each_sentence_as_its_page_shows_it():
    """The whole sentence around the claim's span, copied from the chapter's doctree (glued values
    and formulas as rendered), without the page's ids, with cross-references as text."""
    from docutils import nodes
    from sphinx import addnodes

    from booktools.ext import claimtable

    doc = nodes.paragraph()
    span = nodes.inline(classes=["claim"], ids=["claim-falls"], names=["claim-falls"])
    ref = addnodes.pending_xref("", nodes.Text("Figure 2"), refdoc="chapters/paths", ids=["id3"])
    glued = nodes.container(nb_element="mime_bundle", ids=["x"])  # myst-nb's glued value
    for mime, text in (("text/plain", "'0.25'"), ("text/markdown", "0.25")):
        glued += nodes.container("", nodes.Text(text), mime_type=mime)
    span += [
        nodes.Text("it falls to "),
        glued,
        nodes.Text(" as "),
        ref,
    ]
    span += nodes.math("a", "a")
    doc += [nodes.Text("Before. Here, with "), nodes.math("b", "b"), nodes.Text(", "), span]
    doc += [nodes.Text(" fast (at "), nodes.strong("", "depth 4"), nodes.Text("). After it.")]
    got = claimtable.page_sentences(doc)
    assert list(got) == ["falls"]
    before, claim, after = (nodes.inline("", "", *part) for part in got["falls"])
    assert before.astext() == "Here, with b, "
    assert claim.astext() == "it falls to 0.25 as Figure 2a"
    assert after.astext() == " fast (at depth 4)."
    assert not list(claim.findall(addnodes.pending_xref))
    assert all(not n["ids"] for n in claim.findall(nodes.Element))
    assert span["ids"] == ["claim-falls"]  # the page keeps its own
    assert claim.children[0].parent is not span and span.parent is doc  # copies, not the page


def test_a_claims_formulas_are_typeset_as_math_and_an_unpaired_dollar_is_refused():
    """The status page's claims table shows $...$ as math (the CI browser found raw TeX there)."""
    from docutils import nodes

    from booktools.ext import claimtable

    parts = claimtable.inline(r"close to $\sqrt{N_l}$ times one path's, at $\lambda = 1$")
    assert [type(p) for p in parts] == [nodes.Text, nodes.math, nodes.Text, nodes.math]
    assert parts[1].astext() == r"\sqrt{N_l}" and parts[3].astext() == r"\lambda = 1"
    assert [type(p) for p in claimtable.inline("no formula")] == [nodes.Text]
    with pytest.raises(ValueError, match="unpaired"):
        claimtable.inline("costs $5")


def test_tests_alone_measure_only_the_test_session(tmp_path, monkeypatch):
    """``--tests`` times ``python3 tasks.py test`` alone and the page shows it with its counts;
    a failed session is recorded as failed and the command exits non-zero."""
    monkeypatch.setattr(script, "STATUS_DIR", tmp_path)
    monkeypatch.setattr(script, "JSON_PATH", tmp_path / "status.json")
    monkeypatch.setattr(script, "TABLE_PATH", tmp_path / "table.md")
    done = []
    monkeypatch.setattr(script, "time_chapter", lambda path, mode: done.append("chapter"))
    monkeypatch.setattr(script, "run_benchmark", lambda: done.append("benchmark"))
    monkeypatch.setattr(script, "time_book_build", lambda mode, cache=None: done.append(mode))
    session = {"seconds": 600.0, "ok": True, "counts": {"passed": 12}, "measured": "2026-01-02"}
    monkeypatch.setattr(script, "time_test_session", lambda: done.append("tests") or session)
    assert script.main(["--tests"]) == 0
    assert done == ["tests"]
    table = (tmp_path / "table.md").read_text()
    assert "`python3 tasks.py test`: 12 passed)* | 10.0 min |" in table
    assert "the test session under 8 minutes (missed)" in table
    monkeypatch.setattr(script, "time_test_session", lambda: {**session, "tex": False})
    assert script.main(["--tests"]) == 0
    assert (
        "12 passed; no TeX on the machine: the PDF tests skipped)*"
        in (tmp_path / "table.md").read_text()
    )
    session = {**session, "ok": False}
    assert script.main(["--tests"]) == 1
    assert "**failed**" in (tmp_path / "table.md").read_text()


def test_the_session_summary_is_read_from_pytests_last_line(monkeypatch, tmp_path):
    class Done:
        returncode = 0
        stdout = "....\n==> done\n1404 passed, 3 skipped, 2 deselected in 612.3s (0:10:12)\n"
        stderr = "a warning\n"

    monkeypatch.setattr(script.subprocess, "run", lambda *a, **k: Done())
    monkeypatch.setattr(script, "TESTS_LOG", tmp_path / "tests.log")
    out = script.time_test_session()
    assert out["ok"] and out["counts"] == {"passed": 1404, "skipped": 3, "deselected": 2}
    assert (tmp_path / "tests.log").read_text() == Done.stdout + Done.stderr  # kept to read


def test_the_page_says_how_much_other_work_shared_the_machine():
    """Each run records the cores other work kept busy while it ran (``others``,
    booktools.machine): the page says the most any run saw, or that some runs shared the machine
    (their times upper bounds, a missed target said to be missed on a shared machine); records
    from before that measurement fall back on their load average."""
    cores = os.cpu_count()
    session = {"seconds": 420.0, "ok": True, "measured": "2026-12-07T07:00:00Z"}
    build = {"mode": "full", "seconds": 280.0, "ok": True, "toy": "cached", "measured": "x"}
    idle = {
        "machine": {"cores": cores},
        "book_builds": {"full": {**build, "others": 0.01}},
        "test_session": {**session, "others": 0.03},
    }
    table = script.render(idle)
    said = "Other work kept at most 0.03 of the machine's cores busy, on average, during the 2 "
    assert said in table
    assert "shared the machine" not in table and "under 8 minutes (met)" in table
    shared = {**idle, "test_session": {**session, "seconds": 600.0, "others": 1.2}}
    table = script.render(shared)
    assert "1 of these runs shared the machine with other work (on average up to 1.20 of its " in (
        table
    )
    assert "Other work kept" not in table
    assert "the test session under 8 minutes (missed, on a machine shared with other work)" in (
        table
    )
    old = {**idle, "test_session": {**session, "load": 2.0 * cores + 1}}
    table = script.render(old)
    assert (
        "1 of these runs (measured before other work was) ended with a load average above the "
        f"machine's {cores} cores" in table
    )


def test_a_chapter_run_starts_from_an_empty_checkpoint_cache(monkeypatch, tmp_path):
    """Each chapter run is a reader's first: its own empty ``$RANKCOLLAPSE_CACHE``, whatever the
    reader's cache holds, and the reader's value back after it; the page says so."""
    import nbformat

    monkeypatch.setenv("RANKCOLLAPSE_CACHE", str(tmp_path))
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "sorting-abc.pt").write_text("the reader's checkpoint")
    seen = []

    def fake_execute(path, mode, out_dir):
        cache = Path(os.environ["RANKCOLLAPSE_CACHE"])
        seen.append((cache, list(cache.rglob("*"))))
        (cache / "toy").mkdir()
        (cache / "toy" / "trained.pt").write_text("x")  # what the run trains
        return nbformat.v4.new_notebook()

    monkeypatch.setattr(script, "execute", fake_execute)
    runs = [script.time_chapter(toc_notebooks()[0], mode) for mode in ("fast", "full")]
    assert [files for _, files in seen] == [[], []] and seen[0][0] != seen[1][0]
    assert tmp_path not in [cache for cache, _ in seen]
    assert os.environ["RANKCOLLAPSE_CACHE"] == str(tmp_path)
    assert all(r["ok"] and r["cache"] == "empty" for r in runs)
    chapters = {"chapters/paths": {"runs": dict(zip(("fast", "full"), runs))}}
    said = "a reader's first run does: the networks a chapter trains are trained"
    assert said + "." in script.render({"chapters": chapters})
    cached = {"full": {"mode": "full", "seconds": 1.0, "ok": True, "toy": "cached"}}
    assert said + " (the whole book's full-mode row has them cached)." in script.render(
        {"chapters": chapters, "book_builds": cached}
    )
