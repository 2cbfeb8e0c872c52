"""A high-precision reference for the collapse bound: the forward pass, the residual and the book's
constants recomputed with mpmath at 60 significant digits, independently of the library's torch
code (only the weights are read from the model).

Used by tests/test_theory_bound_mp.py. mpmath is pinned in requirements.txt. Small networks only:
everything is plain Python lists of mpmath numbers.
"""

from __future__ import annotations

import mpmath as mp

DPS = 60


def _mat(t):
    return [[mp.mpf(float(v)) for v in row] for row in t.tolist()]


def _mm(A, B):
    return [
        [mp.fsum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))]
        for i in range(len(A))
    ]


def _t(A):
    return [list(r) for r in zip(*A)]


def _add(A, B):
    return [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


def norm_1(A):
    return max(mp.fsum(abs(A[i][j]) for i in range(len(A))) for j in range(len(A[0])))


def norm_inf(A):
    return max(mp.fsum(abs(v) for v in row) for row in A)


def composite(A):
    return mp.sqrt(norm_1(A) * norm_inf(A))


def mean_centred(A):
    n = len(A)
    mean = [mp.fsum(A[i][j] for i in range(n)) / n for j in range(len(A[0]))]
    return [[A[i][j] - mean[j] for j in range(len(A[0]))] for i in range(n)]


def _softmax_rows(S):
    out = []
    for row in S:
        m = max(row)
        e = [mp.e ** (v - m) for v in row]
        z = mp.fsum(e)
        out.append([v / z for v in e])
    return out


def weights(model):
    """Per layer and head: ``(W_QK, W_h)`` as mp matrices, and ``d_qk``."""
    layers = []
    for b in model.layers:
        heads = []
        for h in range(model.config.n_heads):
            WQ, WK = _mat(b.W_Q[h].detach()), _mat(b.W_K[h].detach())
            WV, WO = _mat(b.W_V[h].detach()), _mat(b.W_O[h].detach())
            heads.append((_mm(WQ, _t(WK)), _mm(WV, WO)))
        layers.append(heads)
    return layers, model.config.d_qk


def forward(model, X, skip=False):
    """Hidden states ``X_0 .. X_L`` and each layer's attention matrices, at ``DPS`` digits."""
    with mp.workdps(DPS):
        layers, dqk = weights(model)
        s = mp.sqrt(dqk)
        Xl = _mat(X)
        hidden, attentions = [Xl], []
        for heads in layers:
            out = [[mp.mpf(0)] * len(Xl[0]) for _ in Xl]
            Ps = []
            for WQK, W in heads:
                logits = [[v / s for v in row] for row in _mm(_mm(Xl, WQK), _t(Xl))]
                P = _softmax_rows(logits)
                Ps.append(P)
                out = _add(out, _mm(_mm(P, Xl), W))
            Xl = _add(Xl, out) if skip else out
            hidden.append(Xl)
            attentions.append(Ps)
        return hidden, attentions


def residuals(hidden):
    """Mean-centred composite residual of every hidden state, at ``DPS`` digits."""
    with mp.workdps(DPS):
        return [composite(mean_centred(Xl)) for Xl in hidden]


def layer_constants(model, X):
    """The book's ``c_l = 4 gamma_l beta_l H / sqrt(d_qk)`` (mean centre), recomputed from
    Definition 'The constant gamma of a layer' at ``DPS`` digits."""
    with mp.workdps(DPS):
        hidden, attentions = forward(model, X)
        layers, dqk = weights(model)
        H = model.config.n_heads
        cs = []
        for Xl, Ps, heads in zip(hidden[:-1], attentions, layers):
            R = mean_centred(Xl)
            q = [norm_1(WQK) for WQK, _ in heads]
            w1 = [norm_1(W) for _, W in heads]
            winf = [norm_inf(W) for _, W in heads]
            beta = max(qh * mp.sqrt(a * b) for qh, a, b in zip(q, w1, winf))
            nu = (
                mp.sqrt(max(qh * a for qh, a in zip(q, w1)) * max(qh * b for qh, b in zip(q, winf)))
                / beta
            )
            eps = max(
                abs(v) / mp.sqrt(dqk)
                for WQK, _ in heads
                for row in _mm(_mm(R, WQK), _t(R))
                for v in row
            )
            sinhc = mp.sinh(2 * eps) / (2 * eps) if eps > 0 else mp.mpf(1)
            col = max(norm_1(P) for P in Ps)
            gamma = sinhc * mp.e**eps * mp.sqrt(col) * nu
            cs.append(4 * gamma * beta * H / mp.sqrt(dqk))
        return cs


def layerwise_bound(model, X):
    """``prod_k c_k^(3^(l-1-k)) r_0^(3^l)`` for ``l = 0..L``, at ``DPS`` digits."""
    with mp.workdps(DPS):
        cs = layer_constants(model, X)
        r0 = residuals([_mat(X)])[0]
        out = [r0]
        for l in range(1, len(cs) + 1):
            b = r0 ** (3**l)
            for k in range(l):
                b *= cs[k] ** (3 ** (l - 1 - k))
            out.append(b)
        return out
