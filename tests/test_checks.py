"""Each exercise check: its reference passes, each known mistake fails with its own hint,
a stub is 'not attempted', and a crashing answer is reported, not raised."""

import pytest

import rankcollapse as rc

EXERCISES = sorted(rc.checks.EXERCISES)


# the least number of exercises each chapter owes its readers (the issues that asked for them)
MINIMUM = {"paths": 2, "collapse": 3, "skip": 3, "mlp": 3, "layernorm": 3, "real_models": 2}


def test_every_chapter_has_its_exercises():
    from chapters_util import toc_notebooks

    for path in toc_notebooks():
        ids = [e for e in EXERCISES if e.split(".")[0] == path.stem]
        assert len(ids) >= MINIMUM.get(path.stem, 2), f"{path.stem}: {ids}"
        for eid in ids:  # and the chapter calls each check
            assert f'rc.checks.check("{eid}"' in path.read_text(), f"{eid} is never checked in {path.name}"


@pytest.mark.parametrize("eid", EXERCISES)
def test_reference_passes(eid):
    ex = rc.checks.EXERCISES[eid]
    assert rc.checks.check(eid, ex.reference, quiet=True).status == "correct"


@pytest.mark.parametrize("eid", EXERCISES)
def test_every_known_mistake_fails_with_its_hint(eid):
    ex = rc.checks.EXERCISES[eid]
    assert len(ex.mistakes) >= 2, f"{eid} needs at least two known mistakes to test against"
    for wrong, hint in ex.mistakes:
        result = rc.checks.check(eid, wrong, quiet=True)
        assert result.status == "incorrect"
        assert hint in result.message


@pytest.mark.parametrize("eid", EXERCISES)
def test_stub_is_not_attempted_and_errors_are_reported(eid):
    def stub(*args):
        raise NotImplementedError

    def crash(*args):
        raise ZeroDivisionError("oops")

    assert rc.checks.check(eid, stub, quiet=True).status == "not attempted"
    result = rc.checks.check(eid, crash, quiet=True)
    assert result.status == "error" and "ZeroDivisionError" in result.message


def test_an_unknown_wrong_answer_gets_the_general_hint():
    result = rc.checks.check("paths.count", lambda L, H, l: 7, quiet=True)
    assert result.status == "incorrect" and rc.checks.EXERCISES["paths.count"].hint in result.message


def test_check_bad_arguments():
    with pytest.raises(ValueError, match="unknown exercise"):
        rc.checks.check("no.such", lambda: 0)
    with pytest.raises(TypeError, match="fn"):
        rc.checks.check("paths.count", 3)


def test_check_prints_verdict(capsys):
    rc.checks.check("paths.count", rc.paths.path_count)
    assert "paths.count: correct" in capsys.readouterr().out


# ----------------------------------------------- answers computed in float32 (issue 11)


def _in_float32(fn):
    """``fn`` run on its inputs cast to float32: what a reader who computes in float32 returns."""
    from rankcollapse.checks import _to_float32

    return lambda *case: fn(*_to_float32(case))


TENSOR_EXERCISES = [e for e in EXERCISES
                    if any(isinstance(a, rc.checks.torch.Tensor) for c in rc.checks.EXERCISES[e].cases() for a in c)]


def test_some_exercises_take_tensors():
    assert len(TENSOR_EXERCISES) >= 10


# an int answer carries no dtype: where the float32 reference's answer is also a known mistake's
# (numerical rank at rtol=1e-10, below float32's resolution, is full rank in float32), the
# mistake's hint wins and a note says that float32 cannot show this case
AMBIGUOUS_IN_FLOAT32 = {"layernorm.numerical_rank"}


@pytest.mark.parametrize("eid", sorted(set(TENSOR_EXERCISES) - AMBIGUOUS_IN_FLOAT32))
def test_reference_in_float32_is_correct_in_float32(eid):
    ex = rc.checks.EXERCISES[eid]
    result = rc.checks.check(eid, _in_float32(ex.reference), quiet=True)
    assert result.status == "correct", result
    assert result.message.startswith("in float32")
    assert "correct (in float32" in repr(result)
    # float64 answers say nothing about precision
    assert rc.checks.check(eid, ex.reference, quiet=True).message == ""


@pytest.mark.parametrize("eid", TENSOR_EXERCISES)
def test_known_mistakes_in_float32_still_fail(eid):
    ex = rc.checks.EXERCISES[eid]
    for wrong, _ in ex.mistakes:
        assert rc.checks.check(eid, _in_float32(wrong), quiet=True).status == "incorrect"


@pytest.mark.parametrize("eid", sorted(AMBIGUOUS_IN_FLOAT32))
def test_float32_answer_that_is_a_known_mistake_gets_both_hints(eid):
    ex = rc.checks.EXERCISES[eid]
    r = rc.checks.check(eid, _in_float32(ex.reference), quiet=True)
    assert r.status == "incorrect" and "Computed in float32?" in r.message
    assert any(hint in r.message for _, hint in ex.mistakes)


def test_float32_note_names_the_tail_where_float32_loses_it():
    # a ratio of small differences (relative gain at 1e-3 perturbations) loses digits in float32
    r = rc.checks.check("mlp.relative_gain",
                        _in_float32(rc.checks.EXERCISES["mlp.relative_gain"].reference), quiet=True)
    assert r.message == "in float32; float64 would show the tail"
    r = rc.checks.check("collapse.beta", _in_float32(rc.checks.EXERCISES["collapse.beta"].reference), quiet=True)
    assert r.message == "in float32"


def test_slightly_wrong_answers_fail_in_either_dtype():
    import torch

    ex = rc.checks.EXERCISES["collapse.beta"]
    off = lambda *case: ex.reference(*case) * (1 + 1e-3)  # noqa: E731
    assert rc.checks.check("collapse.beta", off, quiet=True).status == "incorrect"
    assert rc.checks.check("collapse.beta", _in_float32(off), quiet=True).status == "incorrect"
    lay = rc.checks.EXERCISES["paths.two_layer"]
    swapped = lambda *c: {k: v.to(torch.float32) for k, v in lay.mistakes[0][0](*c).items()}  # noqa: E731
    assert rc.checks.check("paths.two_layer", swapped, quiet=True).status == "incorrect"
