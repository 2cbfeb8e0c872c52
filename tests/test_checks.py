"""Each exercise check: its reference passes, each known mistake fails with its own hint,
a stub is 'not attempted', and a crashing answer is reported, not raised."""

import pytest

import rankcollapse as rc

EXERCISES = sorted(rc.checks.EXERCISES)


# the least number of exercises each chapter owes its readers (the issues that asked for them)
MINIMUM = {"paths": 2, "collapse": 3, "skip": 3, "mlp": 3, "layernorm": 3, "real_models": 2, "toy_tasks": 3}


def test_every_chapter_has_its_exercises():
    from booktools.toc import toc_notebooks

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


def test_in_the_book_build_a_pass_says_it_checked_the_reference_solution(monkeypatch, capsys):
    """The book runs each check on the solution it prints: the page must not show a reader's pass."""
    monkeypatch.delenv(rc.checks.BOOK_BUILD_ENV, raising=False)
    assert "correct" in repr(rc.checks.check("paths.count", rc.paths.path_count, quiet=True))
    monkeypatch.setenv(rc.checks.BOOK_BUILD_ENV, "1")
    rc.checks.check("paths.count", rc.paths.path_count)
    out = capsys.readouterr().out
    assert "checked against the reference solution" in out and "correct" not in out

    def stub(*args):
        raise NotImplementedError

    # the student edition's stubs still answer "not attempted", build or not
    assert "not attempted" in repr(rc.checks.check("paths.count", stub, quiet=True))
