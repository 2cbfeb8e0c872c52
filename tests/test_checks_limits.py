"""Checks specific to the exercises of checks/limits.py; what every exercise must satisfy
(reference passes, known mistakes fail with their hint, stubs are not attempted) is in
test_checks.py."""

import math

import rankbook as book


def test_depth_needed_agrees_with_the_bound_and_with_the_closed_form():
    """The numerical half of ex-limits-prove: the reference's depth is where the bound, evaluated
    directly, first drops below tau (checked at that depth and the one before), and, above the
    threshold, the closed form of part 3, the smallest integer above log_3(ln(1/(tau sqrt c)) /
    ln(1/u0))."""
    ex = book.checks.EXERCISES["limits.depth_needed"]
    seen = {"none": 0, "deep": 0}
    for c, r0, tau in ex.cases():
        L = ex.reference(c, r0, tau)
        u0 = math.sqrt(c) * r0
        bound = lambda k: c ** ((3**k - 1) / 2) * r0 ** (3**k) if 3**k < 600 else 0.0  # noqa: E731
        if L is None:
            seen["none"] += 1
            assert u0 >= 1 and r0 >= tau
            continue
        if L <= 5:  # small enough to evaluate the bound directly
            assert bound(L) < tau and (L == 0 or bound(L - 1) >= tau), (c, r0, tau, L)
        if u0 < 1 and tau * math.sqrt(c) < 1:
            x = math.log(math.log(1 / (tau * math.sqrt(c))) / math.log(1 / u0), 3)
            assert L == max(0, math.floor(x) + 1), (c, r0, tau, L, x)
            seen["deep"] += L >= 10
    assert seen["none"] and seen["deep"]  # the cases reach both ends


def test_depth_needed_a_right_answer_passes_a_wrong_one_gets_its_hint():
    def right(c, r0, tau):
        u0 = math.sqrt(c) * r0
        if u0 >= 1:
            return 0 if r0 < tau else None
        x = math.log(1 / (tau * math.sqrt(c))) / math.log(1 / u0)
        return 0 if x <= 0 else max(0, math.floor(math.log(x, 3)) + 1)

    assert book.checks.check("limits.depth_needed", right, quiet=True).status == "correct"
    paper_condition = lambda c, r0, tau: None if c >= 1 else right(c, r0, tau)  # noqa: E731
    result = book.checks.check("limits.depth_needed", paper_condition, quiet=True)
    assert result.status == "incorrect" and "not when c < 1" in result.message
