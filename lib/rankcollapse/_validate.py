"""Input checks shared by the library: clear errors that name the argument.

Every public function of the library calls these before any arithmetic, so that bad input
fails with a ``TypeError`` or ``ValueError`` naming what was wrong instead of a shape error
from deep inside torch.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

__all__ = [
    "as_tokens",
    "check_bool",
    "check_choice",
    "check_dtype",
    "check_finite_float",
    "check_int",
    "check_positive_float",
]


def check_int(name: str, value, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (a numpy bool too); a ``TypeError`` otherwise.

    Strings, numbers and ``None`` are refused: ``skip="no"`` is truthy, so accepting it would
    silently turn the option on.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def _real(name: str, value) -> float:
    """``value`` as a ``float``, if it is a real number (not a bool, a string, a tensor...)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def check_positive_float(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite ``float`` that is positive (or non-negative)."""
    value = _real(name, value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value}")
    return value


def check_finite_float(name: str, value) -> float:
    """Return ``value`` as a finite ``float`` of any sign; bools, strings, NaN and inf are refused."""
    value = _real(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def check_dtype(name: str, value) -> torch.dtype:
    """``torch.float32`` or ``torch.float64`` (also given as ``"float32"``/``"float64"``); anything else is refused."""
    dtype = {"float32": torch.float32, "float64": torch.float64}.get(value, value) if isinstance(value, str) else value
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"{name} must be torch.float32 or torch.float64, got {value!r}")
    return dtype


def check_choice(name: str, value, choices) -> str:
    """Check that ``value`` is one of the strings in ``choices``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {sorted(choices)}, got {type(value).__name__} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def as_tokens(
    name: str,
    X,
    *,
    d: int | None = None,
    dtype: torch.dtype | None = None,
    max_batch_dims: int | None = None,
) -> torch.Tensor:
    """Check a token matrix ``X`` of shape ``(..., n, d)`` and return it as a floating tensor.

    ``X`` may be a torch tensor or a numpy array. It must have at least two dimensions
    (``n`` tokens by ``d`` features), no empty dimension, only finite entries, and, when
    ``d`` is given, exactly ``d`` features. When ``dtype`` is given the result is cast to it.
    """
    if isinstance(X, np.ndarray):
        X = torch.from_numpy(X)
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array of shape (..., n, d), got {type(X).__name__}")
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (n, d) or (..., n, d), got shape {tuple(X.shape)}")
    if max_batch_dims is not None and X.ndim > 2 + max_batch_dims:
        raise ValueError(
            f"{name} must have at most {max_batch_dims} batch dimension(s), i.e. shape (n, d)"
            + (" or (b, n, d)" if max_batch_dims >= 1 else "")
            + f", got shape {tuple(X.shape)}"
        )
    if any(s == 0 for s in X.shape):
        raise ValueError(f"{name} has an empty dimension: shape {tuple(X.shape)}")
    if not (X.is_floating_point() or X.dtype in (torch.int32, torch.int64)):
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    if d is not None and X.shape[-1] != d:
        raise ValueError(f"{name} must have {d} features in its last dimension, got shape {tuple(X.shape)}")
    if dtype is not None:
        X = X.to(dtype)
    elif not X.is_floating_point():
        X = X.to(torch.get_default_dtype())
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    return X
