"""Checks specific to the exercises of checks/collapse.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in test_checks.py."""

import torch

import rankcollapse as rc


def test_beta_reference_agrees_with_the_library():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=1, n_heads=2, d_model=6, d_qk=3, d_v=2), seed=0)
    b = model.layers[0]
    ref = rc.checks.EXERCISES["collapse.beta"].reference
    got = torch.stack([ref(b.W_Q[h], b.W_K[h], b.W_V[h], b.W_O[h]) for h in range(2)]).detach()
    assert torch.allclose(got, rc.theory.beta(model)[0])


def test_centred_output_is_the_residual_of_the_attention_output():
    ex = rc.checks.EXERCISES["collapse.centred_output"]
    for P, R, W in ex.cases():
        X = R + torch.randn(1, R.shape[1], dtype=R.dtype)  # any common part
        assert torch.allclose(ex.reference(P, R, W), rc.residual.res(P @ X @ W))


def test_cascade_reference_is_the_papers_exponent():
    ref = rc.checks.EXERCISES["collapse.cascade"].reference
    assert ref(2.0, 1.0, 3) == 2.0**13
    assert ref(1.0, 0.5, 2) == 0.5**9
