"""The claims sweep (booktools.sweep): every chapter at many seeds, each claim's outcome recorded.

The sweep's mechanics are tested here on a tiny fake chapter (one real kernel, a few seconds) and
on records made by hand. The tests that read the book's own record (``status/claims.json``: it
covers every chapter, no chapter changed since it was swept, every claim false at a swept seed
states its rate or a narrower scale) are at the end.
"""

import json

import pytest

from booktools import BUILD, sweep

FAKE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# Fake

## 1. The only section

On odd seeds [this claim is false]{.claim #claim-odd-false},
and [this one holds]{.claim #claim-after}.

```{code-cell} ipython3
:tags: [parameters]

mode = "fast"
seed = 0
```

```{code-cell} ipython3
from rankbook.page import ChapterRun

run = ChapterRun("fake", mode, seed, {})
run.claim("odd-false", section=1, condition="seed is even", holds=seed % 2 == 0, evidence="e")
run.claim("after", section=1, condition="always", holds=True, evidence="e")
```
"""


def _record_glue(*claims):
    """A notebook as papermill returns one, holding only glued claim records."""
    from booktools.outputs import GLUE_DATA_KEY

    glued = {
        f"claim.{c['name']}": {
            "metadata": {"scrapbook": {"name": f"claim.{c['name']}"}},
            "data": {"text/plain": json.dumps(c)},
        }
        for c in claims
    }
    return {"cells": [], "metadata": {GLUE_DATA_KEY: glued}}


def _claim(name, holds, scale="any", rate=None):
    return {
        "name": name,
        "holds": holds,
        "scale": scale,
        "rate": rate,
        "section": "1",
        "sentence": f"the sentence of {name}",
    }


@pytest.mark.parametrize(
    "text, seeds",
    [("0-9", tuple(range(10))), ("0,2,5", (0, 2, 5)), ("0-2,7", (0, 1, 2, 7)), ("", ())],
)
def test_seeds_are_read_as_ranges_and_lists(text, seeds):
    assert sweep.parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["a-b", "5-2", "-1"])
def test_bad_seeds_are_refused(text):
    with pytest.raises(ValueError, match="seeds"):
        sweep.parse_seeds(text)


def test_fewer_full_seeds_for_cost_never_below_three():
    assert all(n >= sweep.MIN_FULL_SEEDS for n, _why in sweep.FEWER_FULL_SEEDS.values())
    chapter = next(iter(sweep.FEWER_FULL_SEEDS))
    assert sweep.full_seeds_of(chapter, range(5)) == tuple(
        range(sweep.FEWER_FULL_SEEDS[chapter][0])
    )
    assert sweep.full_seeds_of("paths", range(5)) == tuple(range(5))


def test_a_false_claim_is_recorded_and_the_run_goes_on(tmp_path):
    """A real sweep of a fake chapter at one seed where its first claim is false: the run goes on
    to the second claim, both outcomes and the sentences the prose marks are recorded, with the
    source hash, the commit and the run's wall time."""
    path = BUILD / "sweep-fake" / "fake.md"  # under the checkout, as the runs' order wants
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE)
    record_path = tmp_path / "claims.json"
    record = sweep.sweep([path], fast_seeds=(1,), full_seeds=(), jobs=1, record_path=record_path)
    entry = record["chapters"]["fake"]["fast"]
    assert entry["errors"] == {}
    assert entry["claims"] == {"odd-false": {"1": False}, "after": {"1": True}}
    assert entry["declared"]["odd-false"]["sentence"] == "this claim is false"
    assert entry["source_sha256"] == sweep.source_hash(path) and entry["seconds"]["1"] > 0
    assert json.loads(record_path.read_text()) == record
    assert record["sweeps"][-1]["chapters"] == ["fake"] and record["sweeps"][-1]["wall_seconds"] > 0


def test_an_error_is_recorded_for_its_seed_and_a_sweep_merges(tmp_path):
    """A run that fails (not a claim) is an error for that seed; sweeping one chapter keeps the
    others' results, and the mode it did not sweep while its source is unchanged."""
    paths = {}
    for name in ("one", "two"):
        paths[name] = tmp_path / f"{name}.md"
        paths[name].write_text(f"# {name}\n")
    record_path = tmp_path / "claims.json"

    def runner(runs, jobs, done):
        made = {}
        for key in runs:
            chapter, mode, seed = key
            if (chapter, seed) == ("two", 1):
                made[key] = RuntimeError("a bug, not a claim")
            else:
                made[key] = _record_glue(_claim("c", holds=seed != 2))
            done(key, 0.5, made[key] if isinstance(made[key], Exception) else None)
        return made

    quiet = dict(runner=runner, echo=lambda *a: None, record_path=record_path)
    sweep.sweep(list(paths.values()), (0, 1, 2), (0, 1, 2), **quiet)
    record = sweep.read(record_path)
    assert record["chapters"]["two"]["fast"]["errors"] == {"1": "RuntimeError: a bug, not a claim"}
    assert record["chapters"]["one"]["fast"]["claims"]["c"] == {"0": True, "1": True, "2": False}
    assert sweep.held(record["chapters"]["one"], "full", "c") == (2, 3, [2])

    sweep.sweep([paths["two"]], (0,), (), **quiet)  # two again, fast only
    record = sweep.read(record_path)
    assert record["chapters"]["one"]["fast"]["seeds"] == [0, 1, 2]  # kept
    assert record["chapters"]["two"]["fast"]["seeds"] == [0]  # replaced
    assert record["chapters"]["two"]["full"]["seeds"] == [0, 1, 2]  # kept: same source
    paths["two"].write_text("# two, changed\n")
    sweep.sweep([paths["two"]], (0,), (), **quiet)
    assert "full" not in sweep.read(record_path)["chapters"]["two"]  # dropped: source changed
    assert len(sweep.read(record_path)["sweeps"]) == 3


def _entry(path, fast, full, declared):
    sha = sweep.source_hash(path)
    return {
        mode: {
            "seeds": sorted(int(s) for s in next(iter(outcomes.values()))),
            "errors": {},
            "claims": outcomes,
            "declared": declared,
            "source_sha256": sha,
        }
        for mode, outcomes in (("fast", fast), ("full", full))
    }


def test_the_record_checks_fail_where_they_should(tmp_path):
    """The checks the book's record must pass (below), on a record made by hand."""
    path = tmp_path / "ch.md"
    path.write_text("# ch\n")
    all10, all5 = {str(s): True for s in range(10)}, {str(s): True for s in range(5)}
    nine = {**all10, "7": False}
    declared = {
        "every": {"section": "1", "scale": "any", "rate": None},
        "nine-of-ten": {"section": "2", "scale": "any", "rate": 0.9},
        "too-high": {"section": "2", "scale": "any", "rate": 0.95},
        "fast-false": {"section": "3", "scale": "any", "rate": None},
        "full-only": {"section": "3", "scale": "full", "rate": None},
    }
    fast = {"every": all10, "nine-of-ten": nine, "too-high": nine, "fast-false": nine}
    fast["full-only"] = nine  # not checked in fast mode
    full = {name: all5 for name in declared}
    record = {"chapters": {"ch": _entry(path, fast, full, declared)}}
    problems = sweep.unstated_rates(record)
    assert [p.split(" ")[0] for p in problems] == ["ch.fast-false", "ch.too-high"]
    assert "held at 9/10 fast-mode seeds (false at [7])" in problems[0]
    assert sweep.stale(record, [path]) == [] and sweep.uncovered(record, ["ch"]) == []
    path.write_text("# ch, changed\n")
    [line] = sweep.stale(record, [path])
    assert line.startswith("ch:") and "python -m booktools.sweep --chapters ch" in line
    record["chapters"]["ch"]["full"]["seeds"] = [0, 1]
    record["chapters"]["ch"]["fast"]["errors"] = {"4": "ValueError: x"}
    assert len(sweep.uncovered(record, ["ch"])) == 2
    assert len(sweep.uncovered(record, ["other"])) == 2  # never swept: both modes
    other = tmp_path / "other.md"
    other.write_text("# other\n")
    assert sweep.stale(record, [other]) == [
        "other: never swept: python -m booktools.sweep --chapters other"
    ]
