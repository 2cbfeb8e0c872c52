"""Checks specific to the exercises of checks/skip.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import torch

import rankbook as book
import rankcollapse as rc


def test_residual_after_layer_is_the_residual_of_a_skip_layer():
    ex = book.checks.EXERCISES["skip.residual_after_layer"]
    for P, R, W in ex.cases():
        X = R + torch.randn(1, R.shape[1], dtype=R.dtype)
        assert torch.allclose(ex.reference(P, R, W), rc.residual.res(X + P @ X @ W))


def test_reserved_map_keeps_content_columns():
    ex = book.checks.EXERCISES["skip.reserved_map"]
    for M, d in ex.cases():
        W = ex.reference(M, d)
        X = torch.randn(5, d, dtype=M.dtype)
        assert torch.equal((X + X @ W)[:, : M.shape[0]], X[:, : M.shape[0]])


def test_uniform_layer_keeps_the_residual():
    ex = book.checks.EXERCISES["skip.uniform_layer"]
    for X, W in ex.cases():
        assert torch.allclose(rc.residual.res(ex.reference(X, W)), rc.residual.res(X))
