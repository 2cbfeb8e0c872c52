"""Checks specific to the exercises of checks/collapse.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import pytest
import torch

import rankbook as book
import rankcollapse as rc


def test_beta_reference_agrees_with_the_library():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=1, n_heads=2, d_model=6, d_qk=3, d_v=2), seed=0)
    b = model.layers[0]
    ref = book.checks.EXERCISES["collapse.beta"].reference
    got = torch.stack([ref(b.W_Q[h], b.W_K[h], b.W_V[h], b.W_O[h]) for h in range(2)]).detach()
    assert torch.allclose(got, rc.theory.beta(model)[0])


def test_centred_output_is_the_residual_of_the_attention_output():
    ex = book.checks.EXERCISES["collapse.centred_output"]
    for P, R, W in ex.cases():
        X = R + torch.randn(1, R.shape[1], dtype=R.dtype)  # any common part
        assert torch.allclose(ex.reference(P, R, W), rc.residual.res(P @ X @ W))


def test_cascade_reference_is_the_papers_exponent():
    ref = book.checks.EXERCISES["collapse.cascade"].reference
    assert ref(2.0, 1.0, 3) == 2.0**13
    assert ref(1.0, 0.5, 2) == 0.5**9


def test_step3_bounds_hold_on_the_random_instances_the_check_draws():
    """The numerical half of ex-collapse-prove: the chapter's two bounds on Delta hold on every
    random attention matrix the check takes its inputs from; a correct answer passes, a wrong bound
    fails with its hint."""
    import math

    import rankbook as book
    from rankbook.checks.collapse_step3 import step3_instances, step3_measure

    ex = book.checks.EXERCISES["collapse.step3_bounds"]
    instances = step3_instances()
    assert len(instances) == len(ex.cases())
    for a, E in instances:
        m = step3_measure(a, E)
        row, col = (float(x) for x in ex.reference(m["eps"], m["p1"]))
        assert 0 < m["delta_inf"] <= row and 0 < m["delta_1"] <= col, m
    right = lambda eps, p1: (
        2 * math.sinh(2 * eps),
        2 * math.sinh(2 * eps) * math.exp(2 * eps) * p1,
    )  # noqa: E731
    assert book.checks.check("collapse.step3_bounds", right, quiet=True).status == "correct"
    forgot = lambda eps, p1: (2 * math.sinh(2 * eps), 2 * math.sinh(2 * eps))  # noqa: E731  the columns like the rows
    result = book.checks.check("collapse.step3_bounds", forgot, quiet=True)
    assert result.status == "incorrect" and "repeats one s_j n times" in result.message
    with pytest.raises(ValueError, match="E must be"):
        step3_measure(torch.zeros(3), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="a must be"):
        step3_measure(torch.zeros(2, 2), torch.zeros(2, 2))
