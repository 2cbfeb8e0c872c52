"""Checks specific to the exercises of checks/mlp.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import rankbook as book
import rankcollapse as rc


def test_weight_bound_reference_is_the_library_bound_for_relu():
    """The exercise's bound c |W1||W2| is never below the library's envelope bound."""
    import torch

    from rankcollapse import lipschitz

    for W1, W2 in book.checks.EXERCISES["mlp.weight_bound"].cases():
        env = float(rc.residual.composite_norm(lipschitz.jacobian_envelope(W1, W2, (0.0, 1.0))))
        assert env <= book.checks.EXERCISES["mlp.weight_bound"].reference(W1, W2) + 1e-12
    assert torch.is_tensor(W1)
