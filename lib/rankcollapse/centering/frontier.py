"""The vertex enumeration of the Pareto frontier of ``(f, g)`` for
:func:`rankcollapse.centering.optimal_center` (whose docstring states the problem: minimise
``f g``, attained at a vertex of the frontier).

The vertices are enumerated exactly by non-inferior set estimation (Eisner and
Severance): for two known frontier vertices :math:`(a_1, b_1), (a_2, b_2)` the linear
programme :math:`\\min w_1 f + w_2 g` with :math:`(w_1, w_2) = (b_1 - b_2, a_2 - a_1)`, the
normal of their chord, either attains the chord's value (the chord is an edge of the
frontier) or returns a new vertex, and the two new chords are examined in turn. Every LP
is solved with HiGHS (``scipy.optimize.linprog(method="highs")``); ``f`` and ``g`` of each
returned ``x`` are re-evaluated exactly in float64 and the ``x`` with the smallest ``f g``
is returned. The following exact reductions keep this fast (the LP itself: :mod:`.lp`):

* **Bounds.** :math:`f \\ge f^* = \\max_j \\min_t \\sum_i |X_{ij} - t|` (column medians) and,
  by weak duality, :math:`g \\ge g_{lo} = \\sum_j \\min_t \\sum_i \\lambda_i |X_{ij} - t|`
  for any probability vector :math:`\\lambda` (uniform, then the LPs' row duals). A point
  beats the best product ``p`` found so far only if ``f <= a_cap = p / g_lo`` and
  ``g <= b_cap = p / f*``. As ``f(x) <= a`` iff every ``x_j`` lies in the interval
  :math:`\\{t : \\sum_i |X_{ij} - t| \\le a\\}`, the first cap is a box on ``x``.
* **Ends.** Instead of the two lexicographic extremes (min ``f`` then ``g``, and vice
  versa) the search starts from the solutions :math:`v_1` of :math:`\\min f + \\delta g`
  and :math:`v_2` of :math:`\\min \\varepsilon f + g` with :math:`\\delta = f^*/b_{cap}`,
  :math:`\\varepsilon = g_{lo}/a_{cap}`. Left of :math:`v_1` the frontier lies above the
  line of slope :math:`-1/\\delta` through :math:`v_1`; the product along that line is
  concave in ``a`` and at ``a = f*`` it is :math:`f^*(b_1 + (a_1 - f^*)/\\delta) \\ge a_1
  b_1` because :math:`f^*/\\delta = b_{cap} \\ge b_1`, so nothing left of :math:`v_1`
  beats it; symmetrically right of :math:`v_2`. Often :math:`v_1 = v_2` and two LPs
  settle the question.
* **Pruning.** A chord is skipped when the triangle it forms with the supporting lines
  at its two ends cannot contain a point with a smaller product (``ab`` is quasi-concave
  on the positive quadrant, so its minimum over the triangle is at a corner).
"""

from __future__ import annotations

import heapq
import warnings

import numpy as np

from .lp import LP_TOL, WeightedLP

# A point of the (f, g) plane this far (relative) below a chord of the frontier is a new vertex.
_CHORD_RTOL = 1e-10
# Safety cap on the number of linear programmes solved for one matrix.
_MAX_LPS = 400


def _fg(Y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """``(||Y - 1 x^T||_1, ||Y - 1 x^T||_inf)``: largest column and largest row absolute sum."""
    R = np.abs(Y - x)
    return float(R.sum(axis=0).max()), float(R.sum(axis=1).max())


class FrontierSearch:
    """Vertex enumeration of the Pareto frontier of ``(f, g)`` for a centred, scaled ``Y``.

    ``Y`` is ``(n, d)`` with ``n >= 2``, no constant column, median 0 and largest entry 1 in
    absolute value. ``F_j(t) = sum_i |Y_ij - t|``, so ``f(x) = max_j F_j(x_j)``.
    """

    def __init__(self, Y: np.ndarray, stats: dict | None):
        self.Y = Y
        self.n, self.d = n, _ = Y.shape
        self.order = np.argsort(Y, axis=0, kind="stable")
        self.S = np.take_along_axis(Y, self.order, axis=0)
        k = np.arange(n, dtype=np.float64)[:, None]
        P = np.cumsum(self.S, axis=0)
        # F_j at the sorted entries of column j, via prefix sums.
        self.FS = k * self.S - (P - self.S) + (P[-1] - P) - (n - 1 - k) * self.S
        self.fstar = float(self.FS.min(axis=0).max())
        self.stats = stats if stats is not None else {}
        self.stats.update(lps=0, rounds=0, vertices=0, lp_vars=[], lp_seconds=0.0)
        self.best = (np.inf, None)
        self._lp = None

    # -- points and bounds ---------------------------------------------------------------------
    def _point(self, x):
        """``(f, g, x)``, recording it if its product ``f g`` is the best so far."""
        f, g = _fg(self.Y, x)
        if f * g < self.best[0]:
            self.best = (f * g, (f, g, x))
        return f, g, x

    def _g_lower_bound(self, lam) -> float:
        """Weak duality: ``min g >= sum_j min_t sum_i lam_i |Y_ij - t|`` for a probability
        ``lam``."""
        lam = np.clip(np.asarray(lam, dtype=np.float64), 0.0, None)
        if not lam.sum() > 0:
            return 0.0
        lam = lam / lam.sum()
        cum = np.cumsum(lam[self.order], axis=0)
        k = np.argmax(cum >= 0.5 * cum[-1], axis=0)  # a weighted median (up to rounding)
        cols = np.arange(self.d)
        per_col = np.full(self.d, np.inf)
        for kk in (k - 1, k, k + 1):  # neighbours guard against rounding in the cumsum
            t = self.S[np.clip(kk, 0, self.n - 1), cols]
            per_col = np.minimum(per_col, lam @ np.abs(self.Y - t))
        return float(per_col.sum()) * (1 - 1e-12)

    def _box(self, a: float):
        """Per column, the interval ``{t : F_j(t) <= a}`` (for ``a >= fstar``)."""
        n, S, FS = self.n, self.S, self.FS
        cols = np.arange(self.d)
        above = FS > a
        nl = np.argmin(above, axis=0)  # number of leading sorted entries with F_j > a
        nr = np.argmin(above[::-1], axis=0)  # ... and of trailing ones
        lo = S[0].copy()
        m = nl > 0
        kk, cm = nl[m], cols[m]
        slope = (n - 2 * kk).astype(np.float64)  # minus the slope of F_j just left of S_kk
        lo[m] = np.maximum(
            S[kk, cm] - (a - FS[kk, cm]) / np.where(slope > 0, slope, np.inf), S[kk - 1, cm]
        )
        hi = S[-1].copy()
        m = nr > 0
        rr, cm = n - 1 - nr[m], cols[m]
        slope = (2 * rr + 2 - n).astype(np.float64)  # the slope of F_j just right of S_rr
        hi[m] = np.minimum(
            S[rr, cm] + (a - FS[rr, cm]) / np.where(slope > 0, slope, np.inf), S[rr + 1, cm]
        )
        return lo, np.maximum(hi, lo)

    # -- one LP of the frontier, by column generation over windows -------------------------------
    def _set_windows(self, points, margin: int = 4):
        """Per column, the sorted entries spanned by ``points`` plus ``margin`` either side."""
        P = np.stack(points)
        lo_rank = (self.S < P.min(axis=0)).sum(axis=0)  # entries strictly below the lowest point
        hi_rank = (self.S <= P.max(axis=0)).sum(axis=0)  # entries up to the highest point
        self.il = np.clip(lo_rank - margin, 0, self.n - 1)
        self.ih = np.clip(hi_rank - 1 + margin, 0, self.n - 1)

    def _windows(self):
        cols = np.arange(self.d)
        lo = np.maximum(self.box_lo, self.S[self.il, cols])
        hi = np.maximum(np.minimum(self.box_hi, self.S[self.ih, cols]), lo)
        return lo, hi

    def _solve(self, w1: float, w2: float, around):
        """``min w1 f + w2 g`` over the box with ``g <= b_cap``: ``(x, value, lam)``.

        The LP is first solved with each ``x_j`` restricted to a window of a few intervals of
        column ``j`` around the known points ``around`` (``(f, g, x)`` triples). With the
        optimal row duals ``lam`` (rows of ``g``) and ``mu`` (rows of ``f``) the Lagrangian
        separates into ``h_j(t) = sum_i (lam_i + mu_j) |Y_ij - t|``, convex in ``t``, and the
        window's solution minimises each ``h_j`` over its window. If no ``h_j`` decreases
        when leaving its window (one-sided derivatives at the window's ends), the solution
        minimises every ``h_j`` over the whole box too, so the primal-dual pair satisfies the
        optimality conditions of the full LP. Otherwise the offending windows are widened to
        reach a minimiser of ``h_j`` (a weighted median) and the LP is solved again; windows
        only grow, so this ends.
        """
        Y = self.Y
        points = [v[2] for v in around]
        if not any(v[0] <= self.a_cap and v[1] <= self.b_cap for v in around):
            points.append(self.best[1][2])  # keeps the restricted LP feasible
        self._set_windows(points)
        margin = 2
        while True:
            lo, hi = self._windows()
            lp = self._lp
            if lp is None or not (np.array_equal(lp.lo, lo) and np.array_equal(lp.hi, hi)):
                lp = self._lp = WeightedLP(self, lo, hi)
            x, fun, lam, mu = lp.solve(w1, w2, self.b_cap)
            self.stats["rounds"] += 1
            C = np.clip(lam, 0, None)[:, None] + np.clip(mu, 0, None)[None, :]
            total = C.sum(axis=0)
            tol = 1e-9 * total
            up = (hi < self.box_hi) & ((np.where(Y <= hi, C, -C)).sum(axis=0) < -tol)
            down = (lo > self.box_lo) & ((np.where(Y < lo, C, -C)).sum(axis=0) > tol)
            if not (up.any() or down.any()):
                self.stats["lps"] += 1
                return x, fun, lam
            # S[k] with k the first sorted position where h_j stops decreasing minimises h_j.
            cum = np.cumsum(np.take_along_axis(C, self.order, axis=0), axis=0)
            k = np.argmax(2 * cum >= total * (1 - 1e-12), axis=0)
            self.ih = np.where(
                up, np.clip(np.maximum(self.ih + 1, k + margin), 0, self.n - 1), self.ih
            )
            self.il = np.where(
                down, np.clip(np.minimum(self.il - 1, k - margin), 0, self.n - 1), self.il
            )
            margin *= 2

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> np.ndarray:
        n, d, Y = self.n, self.d, self.Y
        fstar = self.fstar
        # Cheap candidates seed the pruning; the answer is the best vertex (or better).
        for x in (np.zeros(d), Y.mean(axis=0)):
            self._point(x)
        # Weak duality with uniform weights: g(x) >= mean_i g_i(x) = (1/n) sum_j F_j(x_j).
        self.g_lo = float(self.FS.min(axis=0).sum()) / n * (1 - 1e-12)
        self._update_caps()

        # Left end: min f + delta g. Left of its solution v1 the frontier is steeper than
        # -1/delta; with delta <= fstar / b_cap the product there is >= a1 b1 (docstring).
        delta = fstar / self.b_cap
        x, fun, lam = self._solve(1.0, delta, [self.best[1]])
        v1 = self._point(x)
        line1 = (1.0, delta, self._slack(fun, v1, (1.0, delta)))
        self.g_lo = max(self.g_lo, self._g_lower_bound(lam))
        self._update_caps()
        # Right end: min eps f + g. Right of its solution v2 the frontier is flatter than
        # -eps; with eps <= g_lo / a_cap the product there is >= a2 b2.
        eps = self.g_lo / self.a_cap
        x, fun, _ = self._solve(eps, 1.0, [v1])
        v2 = self._point(x)
        line2 = (eps, 1.0, self._slack(fun, v2, (eps, 1.0)))
        self._update_caps()

        heap = [(self._lower_bound(v1, v2, line1, line2), 0, v1, v2, line1, line2)]
        tick = 1
        while heap:
            lb, _, v1, v2, l1, l2 = heapq.heappop(heap)
            if lb >= self.best[0] * (1 - 1e-12):
                continue  # nothing between v1 and v2 can beat the best vertex
            w1, w2 = v1[1] - v2[1], v2[0] - v1[0]
            if not (w1 > 0 and w2 > 0):
                continue  # v1 == v2 (up to rounding): no chord
            w1, w2 = w1 / (w1 + w2), w2 / (w1 + w2)
            if self.stats["lps"] >= _MAX_LPS:
                warnings.warn(
                    f"optimal_center: stopped after {_MAX_LPS} linear programmes; the result may "
                    "be "
                    "slightly suboptimal",
                    RuntimeWarning,
                    stacklevel=4,
                )
                break
            x, fun, _ = self._solve(w1, w2, [v1, v2])
            p = self._point(x)
            self._update_caps()
            chord = 0.5 * ((w1 * v1[0] + w2 * v1[1]) + (w1 * v2[0] + w2 * v2[1]))
            val = w1 * p[0] + w2 * p[1]
            if val >= chord * (1 - _CHORD_RTOL):
                continue  # the chord is an edge of the frontier
            self.stats["vertices"] += 1
            line = (w1, w2, self._slack(fun, p, (w1, w2)))
            for seg in ((v1, p, l1, line), (p, v2, line, l2)):
                heapq.heappush(heap, (self._lower_bound(*seg), tick, *seg))
                tick += 1
        return self.best[1][2]

    def _update_caps(self):
        """A point beating the best product has ``f <= a_cap`` and ``g <= b_cap``."""
        pad = 1 + 1e-9
        self.a_cap = pad * max(self.best[0] / self.g_lo, self.fstar)
        self.b_cap = pad * self.best[0] / self.fstar
        self.box_lo, self.box_hi = self._box(self.a_cap)

    @staticmethod
    def _slack(fun: float, p, w) -> float:
        """A safe right-hand side ``c`` of the supporting line ``w . (a, b) >= c`` of an LP."""
        val = w[0] * p[0] + w[1] * p[1]
        return min(fun, val) - 10 * LP_TOL * max(1.0, abs(val))

    @staticmethod
    def _lower_bound(v1, v2, l1, l2) -> float:
        """Lower bound of ``ab`` on the frontier between the vertices ``v1`` and ``v2``.

        That part of the frontier lies in the triangle bounded by the chord and the supporting
        lines ``l1`` (through ``v1``) and ``l2`` (through ``v2``), and in the box
        ``[a1, a2] x [b2, b1]``. ``ab`` is quasi-concave on the positive quadrant, so its
        minimum over the triangle is at a corner: ``v1``, ``v2`` (already counted) or the
        lines' intersection.
        """
        box = max(v1[0], 0.0) * max(v2[1], 0.0)
        (p1, q1, c1), (p2, q2, c2) = l1, l2
        det = p1 * q2 - p2 * q1
        if abs(det) <= 1e-14 * (abs(p1 * q2) + abs(p2 * q1)):
            return box
        a = (c1 * q2 - c2 * q1) / det
        b = (p1 * c2 - p2 * c1) / det
        return max(box, max(a, 0.0) * max(b, 0.0))
