"""The exercise checks of the chapter's module checks/layernorm.py: each reference passes, each known
mistake fails with its own hint, a stub is 'not attempted'."""

import pytest

import rankcollapse as rc

IDS = sorted(e for e in rc.checks.EXERCISES if e.startswith("layernorm."))


def test_at_least_three_exercises():
    assert len(IDS) >= 3


@pytest.mark.parametrize("eid", IDS)
def test_reference_passes(eid):
    ex = rc.checks.EXERCISES[eid]
    assert rc.checks.check(eid, ex.reference, quiet=True).status == "correct"


@pytest.mark.parametrize("eid", IDS)
def test_plausible_mistakes_fail_with_their_hint(eid):
    ex = rc.checks.EXERCISES[eid]
    assert len(ex.mistakes) >= 2
    for wrong, hint in ex.mistakes:
        result = rc.checks.check(eid, wrong, quiet=True)
        assert result.status == "incorrect", (eid, hint)
        assert hint in result.message


@pytest.mark.parametrize("eid", IDS)
def test_stub_is_not_attempted(eid):
    def stub(*args):
        raise NotImplementedError

    assert rc.checks.check(eid, stub, quiet=True).status == "not attempted"


def test_layer_norm_reference_matches_torch():
    import torch

    for (Y,) in rc.checks.EXERCISES["layernorm.layer_norm"].cases():
        ref = torch.nn.functional.layer_norm(Y, Y.shape[-1:], eps=rc.san.LN_EPS)
        torch.testing.assert_close(rc.checks.EXERCISES["layernorm.layer_norm"].reference(Y), ref)
