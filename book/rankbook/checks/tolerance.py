"""How an answer is compared with the reference: to float64's tolerance (:func:`close`), and to
float32's (:func:`close32`) for an answer computed in float32, with :func:`tail_lost` saying
whether float32 misses what float64 shows. Used by :func:`rankbook.checks.check`.
"""

from __future__ import annotations

import math

import torch

__all__ = ["F32_RTOL", "close", "close32", "has_float_tensor", "tail_lost", "to_float32"]


def close(got, want, rtol=1e-8, atol=1e-10) -> bool:
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(want)
            and all(close(got[k], want[k]) for k in want)
        )
    if isinstance(want, torch.Tensor):
        try:
            got = (
                torch.as_tensor(got, dtype=want.dtype) if not isinstance(got, torch.Tensor) else got
            )
            return got.shape == want.shape and torch.allclose(
                got.to(want.dtype), want, rtol=rtol, atol=atol
            )
        except (TypeError, ValueError, RuntimeError):  # an answer that is no tensor at all
            return False
    if isinstance(want, (int, float)):
        try:
            return math.isclose(float(got), float(want), rel_tol=rtol, abs_tol=atol)
        except (TypeError, ValueError):
            return False
    return got == want


# float32: about 7 significant digits; an answer computed in float32 is compared with this
# relative tolerance, plus ten times how far the reference itself moves when computed in float32
# (a ratio of small differences loses digits in float32 whoever computes it).
F32_RTOL = 1e-5


def to_float32(x):
    """``x`` with every floating tensor in it (tuples, lists, dicts too) cast to float32."""
    if isinstance(x, torch.Tensor):
        return x.float() if x.is_floating_point() else x
    if isinstance(x, (tuple, list)):
        return type(x)(to_float32(a) for a in x)
    if isinstance(x, dict):
        return {k: to_float32(v) for k, v in x.items()}
    return x


def has_float_tensor(x) -> bool:
    if isinstance(x, torch.Tensor):
        return x.is_floating_point()
    if isinstance(x, (tuple, list)):
        return any(has_float_tensor(a) for a in x)
    if isinstance(x, dict):
        return any(has_float_tensor(v) for v in x.values())
    return False


def close32(got, want, want32) -> bool:
    """``got`` equals the float64 reference ``want`` to float32 precision (``want32``: the reference
    in float32)."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and isinstance(want32, dict)
            and set(got) == set(want) == set(want32)
            and all(close32(got[k], want[k], want32[k]) for k in want)
        )
    if isinstance(want, torch.Tensor):
        try:
            g = torch.as_tensor(got).double()
        except (TypeError, ValueError, RuntimeError):
            return False
        w, w32 = want.double(), torch.as_tensor(want32).double()
        if g.shape != w.shape or w32.shape != w.shape:
            return False
        scale = float(w.abs().max()) if w.numel() else 0.0
        atol = F32_RTOL * scale + 10 * float((w32 - w).abs().max() if w.numel() else 0.0) + 1e-30
        return torch.allclose(g, w, rtol=F32_RTOL, atol=atol)
    if isinstance(want, bool) or (isinstance(want, int) and not isinstance(got, float)):
        return got == want or got == want32
    if isinstance(want, (int, float)):
        try:
            g, w, w32 = float(got), float(want), float(want32)
        except (TypeError, ValueError):
            return False
        return abs(g - w) <= F32_RTOL * abs(w) + 10 * abs(w32 - w) + 1e-10
    return got == want


def tail_lost(want, want32) -> bool:
    """Does the reference computed in float32 miss what float64 shows (beyond float32's
    resolution)?"""
    if isinstance(want, dict):
        return any(tail_lost(want[k], want32[k]) for k in want)
    if isinstance(want, torch.Tensor):
        w, w32 = want.double(), torch.as_tensor(want32).double()
        scale = float(w.abs().max()) if w.numel() else 0.0
        return not torch.allclose(w32, w, rtol=F32_RTOL, atol=F32_RTOL * scale)
    if isinstance(want, (int, float)):
        return not math.isclose(float(want32), float(want), rel_tol=F32_RTOL, abs_tol=1e-10)
    return want32 != want
