"""The exercise checks of chapter "Skip connections": references pass, plausible wrong answers fail."""

import pytest
import torch

import rankcollapse as rc

IDS = ["skip.residual_after_layer", "skip.reserved_map", "skip.uniform_layer"]


@pytest.mark.parametrize("eid", IDS)
def test_reference_passes_and_mistakes_fail(eid):
    ex = rc.checks.EXERCISES[eid]
    assert rc.checks.check(eid, ex.reference, quiet=True).passed
    assert len(ex.mistakes) >= 2
    for wrong, hint in ex.mistakes:
        result = rc.checks.check(eid, wrong, quiet=True)
        assert result.status == "incorrect" and hint in result.message


def test_residual_after_layer_is_the_residual_of_a_skip_layer():
    ex = rc.checks.EXERCISES["skip.residual_after_layer"]
    for P, R, W in ex.cases():
        X = R + torch.randn(1, R.shape[1], dtype=R.dtype)
        assert torch.allclose(ex.reference(P, R, W), rc.residual.res(X + P @ X @ W))


def test_reserved_map_keeps_content_columns():
    ex = rc.checks.EXERCISES["skip.reserved_map"]
    for M, d in ex.cases():
        W = ex.reference(M, d)
        X = torch.randn(5, d, dtype=M.dtype)
        assert torch.equal((X + X @ W)[:, : M.shape[0]], X[:, : M.shape[0]])


def test_uniform_layer_keeps_the_residual():
    ex = rc.checks.EXERCISES["skip.uniform_layer"]
    for X, W in ex.cases():
        assert torch.allclose(rc.residual.res(ex.reference(X, W)), rc.residual.res(X))
