"""The linear programme of one weighted objective ``min w1 f + w2 g`` over a box, solved with
HiGHS, for the frontier search of :mod:`rankcollapse.centering.frontier`
(:func:`rankcollapse.centering.optimal_center`).

* **LP formulation.** Between consecutive entries of column ``j`` every
  :math:`|X_{ij} - x_j|` is linear in :math:`x_j`, so :math:`x_j` is written as a lower
  end plus one bounded increment per such interval (exact for an LP: filling the
  intervals out of order can only over-estimate). This needs about ``n + 2 d`` rows
  instead of the ``2 n d`` of the textbook formulation with one variable per entry.
* **Column generation.** Each LP is first solved with every :math:`x_j` restricted to a
  window of a few intervals around nearby known solutions. The optimal duals
  (:math:`\\lambda` for the rows of ``g``, :math:`\\mu` for those of ``f``) split the
  Lagrangian into convex :math:`h_j(t) = \\sum_i (\\lambda_i + \\mu_j) |X_{ij} - t|`; when
  no :math:`h_j` decreases on leaving its window the windowed solution is optimal for the
  whole box (KKT conditions), otherwise the windows are widened and the LP solved again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the frontier search imports this module; the annotation only names its state
    from .frontier import FrontierSearch

# HiGHS feasibility tolerances; the data are scaled so that the largest centred entry is 1.
LP_TOL = 1e-9


class WeightedLP:
    """``min w1 a + w2 b`` s.t. ``F_j(x_j) <= a``, ``g_i(x) <= b <= b_max``, ``lo <= x <= hi``,
    ``a >= fstar``.

    ``x_j = lo_j + sum_k delta_jk`` with one increment ``0 <= delta_jk <= len_jk`` per interval
    between consecutive entries of column ``j`` inside ``[lo_j, hi_j]``. On interval ``k`` the
    distance ``|Y_ij - x_j|`` has slope ``+1`` if ``Y_ij`` lies below the interval and ``-1``
    if above, so with ``q_ij`` intervals below ``Y_ij``

        |Y_ij - x_j| = |Y_ij - lo_j| + sum_{k >= q_ij} delta_jk - sum_{k < q_ij} delta_jk      (1)
                     = |Y_ij - lo_j| + X_j - 2 sum_{k < q_ij} delta_jk
                     = |Y_ij - lo_j| - X_j + 2 sum_{k >= q_ij} delta_jk,
                     (2)

    with ``X_j = sum_k delta_jk``. Columns with few intervals use (1); the others use the
    shorter sum of (2) and an auxiliary variable ``X_j`` defined by an equality row. The row
    ``F_j(x_j) <= a`` is left out when ``F_j <= fstar`` on the whole window (it is then implied
    by ``a >= fstar``, which holds for every ``x``). Variables ``[delta (V), X (aux), a, b]``.
    """

    DENSE_UP_TO = 4  # columns with at most this many intervals use (1)

    def __init__(
        self,
        search: FrontierSearch,
        lo: np.ndarray,
        hi: np.ndarray,
    ):
        import scipy.sparse as sp

        Y, S = search.Y, search.S
        n, d = Y.shape
        self.search, self.lo, self.hi, self.d, self.n = search, lo, hi, d, n
        R = np.abs(Y - lo)
        F_lo, F_hi = R.sum(axis=0), np.abs(Y - hi).sum(axis=0)
        keep_f = np.flatnonzero(np.maximum(F_lo, F_hi) > search.fstar)
        f_row = np.full(d, -1)
        f_row[keep_f] = n + np.arange(keep_f.size)
        lens, col_of = [], []
        rows, cols, vals = [], [], []
        aux = []  # (column, q, m, offset) of the columns using (2)
        off = 0
        for j in range(d):
            s = S[:, j]
            pts = np.concatenate(([lo[j]], s[(s > lo[j]) & (s < hi[j])], [hi[j]]))
            pts = pts[np.concatenate(([True], np.diff(pts) > 0))]
            if pts.size == 1:
                pts = np.array([lo[j], lo[j]])  # a single point: one interval of length 0
            m = pts.size - 1
            lens.append(np.diff(pts))
            col_of.append(np.full(m, j))
            q = np.searchsorted(pts[1:], Y[:, j], side="right")
            if f_row[j] >= 0:
                n_below = np.searchsorted(np.sort(q), np.arange(m), side="right")
                rows.append(np.full(m, f_row[j]))
                cols.append(off + np.arange(m))
                vals.append(2.0 * n_below - n)  # slope of F_j on each interval
            if m <= self.DENSE_UP_TO:
                k = np.arange(m)
                rows.append(np.repeat(np.arange(n), m))
                cols.append(off + np.tile(k, n))
                vals.append(np.where(k[None, :] >= q[:, None], 1.0, -1.0).ravel())
            else:
                aux.append((j, q, m, off))
            off += m
        V = self.V = off
        n_aux = len(aux)
        N = self.N = V + n_aux + 2
        self.col_of, self.lens = np.concatenate(col_of), np.concatenate(lens)
        eq_rows, eq_cols, eq_vals = [], [], []
        if n_aux:
            # Form (2): X_j with sign +-1 and a run of delta's with coefficient -+2.
            ja = np.array([a[0] for a in aux])
            q = np.stack([a[1] for a in aux], axis=1)  # (n, n_aux)
            m = np.array([a[2] for a in aux])
            o = np.array([a[3] for a in aux])
            ii, tt = np.meshgrid(np.arange(n), np.arange(n_aux), indexing="ij")
            ii, tt = ii.ravel(), tt.ravel()
            qq, mm = q.ravel(), m[tt]
            short = qq <= mm - qq
            start = np.where(short, o[tt], o[tt] + qq)
            count = np.where(short, qq, mm - qq)
            rep = np.repeat(np.arange(ii.size), count)
            within = np.arange(rep.size) - np.repeat(np.cumsum(count) - count, count)
            rows += [ii, ii[rep]]
            cols += [V + tt, start[rep] + within]
            vals += [np.where(short, 1.0, -1.0), np.where(short, -2.0, 2.0)[rep]]
            in_aux = np.isin(self.col_of, ja)
            pos = np.full(d, -1)
            pos[ja] = np.arange(n_aux)
            eq_rows = [pos[self.col_of[in_aux]], np.arange(n_aux)]
            eq_cols = [np.flatnonzero(in_aux), V + np.arange(n_aux)]
            eq_vals = [np.ones(int(in_aux.sum())), -np.ones(n_aux)]
        rows += [np.arange(n), f_row[keep_f]]
        cols += [np.full(n, N - 1), np.full(keep_f.size, N - 2)]
        vals += [-np.ones(n), -np.ones(keep_f.size)]
        n_ub = n + keep_f.size
        self.A_ub = sp.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_ub, N)
        )
        self.b_ub = np.concatenate([-R.sum(axis=1), -F_lo[keep_f]])
        self.keep_f = keep_f
        if n_aux:
            self.A_eq = sp.csc_matrix(
                (np.concatenate(eq_vals), (np.concatenate(eq_rows), np.concatenate(eq_cols))),
                shape=(n_aux, N),
            )
            self.b_eq = np.zeros(n_aux)
        else:
            self.A_eq = self.b_eq = None
        self.bounds = np.zeros((N, 2))
        self.bounds[:V, 1] = self.lens
        if n_aux:
            self.bounds[V : V + n_aux, 1] = (hi - lo)[ja]
        self.bounds[-2] = (search.fstar, np.inf)
        self.bounds[-1, 1] = np.inf
        search.stats["lp_vars"].append(V)

    def solve(self, w1: float, w2: float, b_max: float):
        """Solve for the objective ``w1 a + w2 b``: ``(x, optimal value, lam, mu)``.

        ``lam >= 0`` are the duals of the rows of ``g`` and ``mu >= 0`` those of ``f``.
        """
        import time

        from scipy.optimize import linprog

        c = np.zeros(self.N)
        c[-2], c[-1] = w1, w2
        bounds = self.bounds.copy()
        bounds[-1, 1] = b_max
        t0 = time.perf_counter()
        for presolve in (False, True):  # presolve only as a fallback: it rarely pays here
            res = linprog(
                c,
                A_ub=self.A_ub,
                b_ub=self.b_ub,
                A_eq=self.A_eq,
                b_eq=self.b_eq,
                bounds=bounds,
                method="highs",
                options={
                    "primal_feasibility_tolerance": LP_TOL,
                    "dual_feasibility_tolerance": LP_TOL,
                    "presolve": presolve,
                },
            )
            if res.status == 0:
                break
        self.search.stats["lp_seconds"] += time.perf_counter() - t0
        if res.status != 0:
            raise RuntimeError(f"optimal_center: the linear programme failed ({res.message})")
        delta = np.clip(res.x[: self.V], 0.0, self.lens)
        x = self.lo + np.bincount(self.col_of, weights=delta, minlength=self.d)
        duals = -np.asarray(res.ineqlin.marginals)
        mu = np.zeros(self.d)
        mu[self.keep_f] = duals[self.n :]
        return x, float(res.fun), duals[: self.n], mu
