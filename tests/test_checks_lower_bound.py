"""Checks specific to the exercises of checks/lower_bound.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import math

import torch

import rankbook as book
import rankcollapse as rc


def test_construction_layer_is_the_librarys_construction():
    ex = book.checks.EXERCISES["lower_bound.construction_layer"]
    for X, q, w in ex.cases():
        net = rc.lower_bound.construction(1, X.shape[1], 1, q, w)
        assert torch.allclose(ex.reference(X, q, w), net.hidden(X)[-1][0], rtol=1e-12)


def test_construction_layer_multiplies_a_simplex_by_one_factor():
    ex = book.checks.EXERCISES["lower_bound.construction_layer"]
    X = rc.lower_bound.simplex_tokens(5, 6, 2.0)
    Y = ex.reference(X, 3.0, 0.4)
    big = X.abs() > 1e-8
    factor = Y[big] / X[big]
    assert torch.allclose(factor, factor[0].expand_as(factor), rtol=1e-10) and 0 < factor[0] < 1
    exact = 10 ** rc.lower_bound.simplex_log10_ratios([-1], 5, 6, 1, 3.0, 0.4, 2.0)[-1]
    assert math.isclose(factor[0].item(), exact, rel_tol=1e-10)


def test_the_questions_answers_follow_the_chapters_setting():
    assert book.checks.QUESTIONS["lower_bound.predict_deeper"].answer() == "1/2"
    assert book.checks.QUESTIONS["lower_bound.read_gap"].answer() == 8
    full = book.presets.PRESETS["lower_bound"]["full"]
    from rankbook.checks.lower_bound import _SETTING

    assert all(full[k] == v for k, v in _SETTING.items())


def test_ratio_bound_holds_on_the_random_pairs_and_is_attained_on_the_last():
    """The numerical half of ex-lb-prove: sum_j |u_j - v_j| <= 2 tanh(delta / 2) on every pair the
    check draws, with equality on the n = 2 pair of part 2; a right answer passes, a wrong one gets
    its hint."""
    import torch

    import rankbook as book
    from rankbook.checks.lower_bound import ratio_instances

    ex = book.checks.EXERCISES["lower_bound.ratio_bound"]
    pairs = ratio_instances()
    gaps = []
    for u, v in pairs:
        assert (
            torch.isclose(u.sum(), torch.tensor(1.0, dtype=u.dtype))
            and (u > 0).all()
            and (v > 0).all()
        )
        measured, bound = float((u - v).abs().sum()), float(ex.reference(u, v))
        assert measured <= bound * (1 + 1e-12), (u, v)
        gaps.append(measured / bound)
    assert abs(gaps[-1] - 1) < 1e-12 and max(gaps[:-1]) < 1  # attained on the last pair only

    def right(u, v):
        delta = max(abs(float(torch.log(a / b))) for a, b in zip(u, v))
        return 2 * torch.tanh(torch.tensor(delta / 2, dtype=torch.float64))

    assert book.checks.check("lower_bound.ratio_bound", right, quiet=True).status == "correct"
    one_sided = lambda u, v: 2 * torch.tanh((u / v).log().max() / 2)  # noqa: E731
    result = book.checks.check("lower_bound.ratio_bound", one_sided, quiet=True)
    assert result.status == "incorrect" and "with the absolute value" in result.message


def test_contraction_and_preln_step_are_the_librarys():
    ex = book.checks.EXERCISES["lower_bound.contraction"]
    for om, n in ex.cases():
        assert math.isclose(ex.reference(om, n), rc.lower_bound.contraction(om, n).item(),
                            rel_tol=1e-14)  # fmt: skip
    step = book.checks.EXERCISES["lower_bound.preln_step"]
    assert step.reference(8, 0.3, 2.0) == rc.lower_bound_preln.construction_step(8, 0.3, 2.0)
    two = rc.lower_bound_preln.antipodal_tokens(2, 8, 5.0)
    after = rc.lower_bound_preln.construction(1, 8, 0.3, 0.2)(two).hidden_states[-1]
    lost = 5.0 - rc.lower_bound_preln.residual_l2(after).item()
    assert math.isclose(lost, step.reference(8, 0.3, 0.2), rel_tol=1e-9)
    wrong = lambda d, omega, a: omega * math.sqrt(d) * math.tanh(2 * a * math.sqrt(d))  # noqa: E731
    result = book.checks.check("lower_bound.preln_step", wrong, quiet=True)
    assert result.status == "incorrect" and "tanh(eps)" in result.message
    right = book.checks.check(
        "lower_bound.contraction", lambda om, n: ex.reference(om, n), quiet=True
    )
    assert right.status == "correct"
