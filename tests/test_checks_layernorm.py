"""Checks specific to the exercises of checks/layernorm.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import rankbook as book
import rankcollapse as rc


def test_layer_norm_reference_matches_torch():
    import torch

    for (Y,) in book.checks.EXERCISES["layernorm.layer_norm"].cases():
        ref = torch.nn.functional.layer_norm(Y, Y.shape[-1:], eps=rc.san.LN_EPS)
        torch.testing.assert_close(book.checks.EXERCISES["layernorm.layer_norm"].reference(Y), ref)
