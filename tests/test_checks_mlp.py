"""The exercise checks of the chapter's module checks/mlp.py: each reference passes, each known
mistake fails with its own hint, a stub is 'not attempted'."""

import pytest

import rankcollapse as rc

IDS = sorted(e for e in rc.checks.EXERCISES if e.startswith("mlp."))


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


def test_weight_bound_reference_is_the_library_bound_for_relu():
    """The exercise's bound c |W1||W2| is never below the library's envelope bound."""
    import torch

    from rankcollapse import lipschitz

    for W1, W2 in rc.checks.EXERCISES["mlp.weight_bound"].cases():
        env = float(rc.residual.composite_norm(lipschitz.jacobian_envelope(W1, W2, (0.0, 1.0))))
        assert env <= rc.checks.EXERCISES["mlp.weight_bound"].reference(W1, W2) + 1e-12
    assert torch.is_tensor(W1)
