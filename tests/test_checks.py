"""Each exercise check: its reference passes, each known mistake fails with its own hint,
a stub is 'not attempted', and a crashing answer is reported, not raised."""

import pytest

import rankcollapse as rc

EXERCISES = sorted(rc.checks.EXERCISES)


def test_exercises_are_registered():
    assert {"paths.count", "paths.two_layer", "paths.mean_length"} <= set(EXERCISES)


@pytest.mark.parametrize("eid", EXERCISES)
def test_reference_passes(eid):
    ex = rc.checks.EXERCISES[eid]
    assert rc.checks.check(eid, ex.reference, quiet=True).status == "correct"


@pytest.mark.parametrize("eid", EXERCISES)
def test_every_known_mistake_fails_with_its_hint(eid):
    ex = rc.checks.EXERCISES[eid]
    assert ex.mistakes, f"{eid} has no known mistake to test against"
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
