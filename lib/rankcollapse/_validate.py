"""Input checks shared by the library: clear errors that name the argument.

Every public function of the library calls these before any arithmetic, so that bad input
fails with a ``TypeError`` or ``ValueError`` naming what was wrong instead of a shape error
from deep inside torch. One helper per kind of argument:

- a seed: :func:`check_seed` (``0 <= seed < 2**32``, :data:`SEED_LIMIT`, everywhere) and
  :func:`derive_seed` (seeds computed from a seed, reduced into the same range);
- a size or count: :func:`check_int` (with its bounds), :func:`check_cost` (an estimate of memory
  or work checked against a cap before anything is allocated or run);
- an index: :func:`check_index` (``0 <= index < size``; negative indices are refused, not read
  from the end);
- a tensor: :func:`as_tokens` (shape, finiteness) and :func:`check_tensor_kind` (dtype and device:
  float16/bfloat16/complex/bool and meta tensors are refused by name);
- a probability matrix: :func:`check_probability_matrix` (square, non-negative, rows sum to 1);
- a point set: :func:`check_points` (``(n, dim)``, finite);
- a number: :func:`check_positive_float` (finite, positive), :func:`check_finite_float`;
- a generator: :func:`check_generator`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

__all__ = [
    "SEED_LIMIT",
    "as_tokens",
    "check_cost",
    "check_elements",
    "check_axes",
    "check_figure",
    "check_str",
    "check_generator",
    "check_index",
    "check_points",
    "check_probability_matrix",
    "check_seed",
    "check_tensor_kind",
    "derive_seed",
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
    """Return ``value`` if it is ``True`` or ``False`` (a numpy bool too); a ``TypeError``
    otherwise.

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
    """Return ``value`` as a finite ``float`` of any sign; bools, strings, NaN and inf are
    refused."""
    value = _real(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def check_dtype(name: str, value) -> torch.dtype:
    """``torch.float32`` or ``torch.float64`` (also given as ``"float32"``/``"float64"``); anything
    else is refused."""
    dtype = (
        {"float32": torch.float32, "float64": torch.float64}.get(value, value)
        if isinstance(value, str)
        else value
    )
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"{name} must be torch.float32 or torch.float64, got {value!r}")
    return dtype


def check_choice(name: str, value, choices) -> str:
    """Check that ``value`` is one of the strings in ``choices``."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be one of {sorted(choices)}, got {type(value).__name__} {value!r}"
        )
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
        raise TypeError(
            f"{name} must be a torch.Tensor or numpy array of shape (..., n, d), got "
            f"{type(X).__name__}"
        )
    if X.ndim < 2:
        raise ValueError(
            f"{name} must have shape (n, d) or (..., n, d), got shape {tuple(X.shape)}"
        )
    if max_batch_dims is not None and X.ndim > 2 + max_batch_dims:
        raise ValueError(
            f"{name} must have at most {max_batch_dims} batch dimension(s), i.e. shape (n, d)"
            + (" or (b, n, d)" if max_batch_dims >= 1 else "")
            + f", got shape {tuple(X.shape)}"
        )
    if any(s == 0 for s in X.shape):
        raise ValueError(f"{name} has an empty dimension: shape {tuple(X.shape)}")
    check_tensor_kind(name, X)
    if d is not None and X.shape[-1] != d:
        raise ValueError(
            f"{name} must have {d} features in its last dimension, got shape {tuple(X.shape)}"
        )
    if dtype is not None:
        X = X.to(dtype)
    elif not X.is_floating_point():
        X = X.to(torch.get_default_dtype())
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    return X


SEED_LIMIT = 2**32  # numpy's global seeding takes 0 <= seed < 2**32; torch and random take more


def check_seed(name: str, value) -> int:
    """Return ``value`` as an ``int`` after checking it is a seed: an integer,
    ``0 <= seed < 2**32``.

    One range for every seed of the library (presets, ``book.start``, functions taking a
    ``seed``), the one every generator the book seeds accepts (numpy's is the narrowest).
    """
    return check_int(name, value, minimum=0, maximum=SEED_LIMIT - 1)


def derive_seed(seed: int, offset: int = 0, *, stride: int = 1) -> int:
    """A seed computed from a seed: ``(seed * stride + offset) % 2**32``, so it stays in the range
    of :func:`check_seed` whatever ``seed`` the caller passed (the same as
    ``seed * stride + offset`` whenever that is in range, so small seeds draw what they always
    drew)."""
    return (int(seed) * int(stride) + int(offset)) % SEED_LIMIT


def check_index(
    name: str, value, size: int, *, what: str = "entries", allow_negative: bool = False
) -> int:
    """Return ``value`` as an ``int`` in ``[0, size)``; negative indices are refused, not read from
    the end.

    ``allow_negative=True`` (for indices into a grid the caller built, documented so by the
    function): ``-size <= value < 0`` counts from the end, as in Python, and is returned as
    ``value + size``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer index, got {type(value).__name__} {value!r}")
    value = int(value)
    if allow_negative and -size <= value < 0:
        return value + size
    if allow_negative and not 0 <= value < size:
        raise ValueError(
            f"{name} must be an index in -{size} .. {size - 1} ({size} {what}), got {value}"
        )
    if not 0 <= value < size:
        raise ValueError(
            f"{name} must be an index in 0 .. {size - 1} ({size} {what}; negative indices are "
            f"not read from the end), got {value}"
        )
    return value


_REFUSED_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def check_tensor_kind(name: str, X: torch.Tensor, *, integers: bool = True) -> torch.Tensor:
    """Refuse a tensor the library cannot compute with, naming its dtype or device.

    Accepted: float32 and float64 (and int32/int64, converted by the caller, when ``integers``) on a
    real device. Refused: float16 and bfloat16 (too coarse for the residuals the book measures; cast
    with ``X.double()``), complex and bool tensors, other integer types, and meta tensors (no
    values); anything that is not a tensor (a list, a numpy array) with a ``TypeError``.
    """
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(X).__name__}")
    if X.device.type == "meta":
        raise ValueError(
            f"{name} is on the meta device (a tensor without values): pass a tensor on the cpu"
        )
    if X.dtype in _REFUSED_DTYPES:
        raise TypeError(
            f"{name} has dtype {X.dtype}: the library computes in float32 or float64 "
            f"(cast with {name}.double())"
        )
    if X.is_floating_point():
        return X
    if integers and X.dtype in (torch.int32, torch.int64):
        return X
    raise TypeError(f"{name} must hold real numbers (float32 or float64), got dtype {X.dtype}")


def check_probability_matrix(name: str, P, *, atol: float = 1e-6) -> torch.Tensor:
    """``P`` ``(..., n, n)`` as a floating tensor after checking it is row-stochastic: square in its
    last two dimensions, non-negative, and every row summing to 1 within ``atol`` (times the row
    length)."""
    P = as_tokens(name, P)
    if P.shape[-1] != P.shape[-2]:
        raise ValueError(f"{name} must be square in its last two dimensions, got {tuple(P.shape)}")
    if bool((P < 0).any()):
        raise ValueError(f"{name} must have non-negative entries (an attention matrix)")
    worst = float((P.sum(dim=-1) - 1).abs().max())
    if worst > atol * P.shape[-1]:
        raise ValueError(
            f"{name} must be row-stochastic (every row summing to 1), a row's sum is off by "
            f"{worst:.3g}"
        )
    return P


def check_points(name: str, points, *, dim: int | None = None, min_points: int = 1) -> torch.Tensor:
    """``points`` ``(n, dim)`` as a floating tensor: finite, at least ``min_points`` of them, and
    exactly ``dim`` coordinates each when ``dim`` is given (a 3-d point set is refused by a 2-d
    function)."""
    P = as_tokens(name, points, max_batch_dims=0)
    if dim is not None and P.shape[-1] != dim:
        raise ValueError(f"{name} must be an (n, {dim}) point set, got shape {tuple(P.shape)}")
    if P.shape[0] < min_points:
        raise ValueError(f"{name} must hold at least {min_points} points, got {P.shape[0]}")
    return P


def check_generator(name: str, value) -> torch.Generator:
    """``value`` if it is a ``torch.Generator`` (on the cpu); a ``TypeError`` otherwise (an integer
    is not a generator: pass ``torch.Generator().manual_seed(seed)``)."""
    if not isinstance(value, torch.Generator):
        raise TypeError(
            f"{name} must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), "
            f"got {type(value).__name__} {value!r}"
        )
    return value


def _amount(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 2**30:.3g} GiB"
    if float(value) == int(value) and value < 1e7:
        return f"{int(value):,} {unit}"
    return f"{value:.3g} {unit}"


def check_cost(
    name: str, estimate: float, cap: float, *, unit: str = "bytes", alternative: str = ""
) -> None:
    """Refuse, before anything is allocated or run, a call whose ``estimate`` (memory in bytes, or
    work in ``unit``) exceeds ``cap``. The message names the argument ``name``, the estimate, the
    cap and ``alternative``, a cheaper way to the same end."""
    if estimate > cap:
        raise ValueError(
            f"{name}: this call would need about {_amount(estimate, unit)}, more than the cap of "
            f"{_amount(cap, unit)} (a call the caps admit finishes within about a minute on a "
            f"2-core laptop)" + (f"; {alternative}" if alternative else "")
        )


MAX_BYTES = 2**31  # memory cap of one call's largest allocation (2 GiB)
MAX_LAYERS = 4096  # the deepest network the library builds (the book goes to 1024)
MAX_WORK = 10**11  # multiply-adds of one call (about a minute on a 2-core laptop in float64)
# python-level iterations of one call that each touch a layer (layer-steps of a search)
MAX_LOOP = 10**5


def check_elements(name: str, count: int, *, itemsize: int = 8, alternative: str = "") -> None:
    """Refuse an allocation of ``count`` entries of ``itemsize`` bytes beyond :data:`MAX_BYTES`,
    naming ``name``."""
    check_cost(
        name,
        count * itemsize,
        MAX_BYTES,
        alternative=alternative or "ask for fewer or smaller samples",
    )


def check_str(name: str, value) -> str:
    """``value`` if it is a ``str``; a ``TypeError`` naming ``name`` otherwise (bytes, None,
    numbers...)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r:.60}")
    return value


def check_axes(name: str, ax):
    """``ax`` if it looks like matplotlib ``Axes`` (it can ``plot``); a ``TypeError`` naming
    ``name`` otherwise."""
    if not (hasattr(ax, "plot") and hasattr(ax, "set_xlabel")):
        raise TypeError(
            f"{name} must be a matplotlib Axes (e.g. from plt.subplots()), got {type(ax).__name__}"
        )
    return ax


def check_figure(name: str, fig):
    """``fig`` if it looks like a matplotlib ``Figure`` (it has a canvas and sizes); a ``TypeError``
    otherwise."""
    if not (hasattr(fig, "canvas") and hasattr(fig, "get_size_inches")):
        raise TypeError(f"{name} must be a matplotlib Figure, got {type(fig).__name__}")
    return fig
