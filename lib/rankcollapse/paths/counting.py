"""Counting the paths of a network: how many of each length, and the paths themselves.

With skip connections a path through ``L`` layers of ``H`` heads takes, in each layer, a head
or the skip: ``(H+1)^L`` paths, ``C(L, l) H^l`` of length ``l``. Book: chapter "The path
decomposition", section "How many paths, how long".
"""

from __future__ import annotations

import math
from itertools import product

import torch

from .._validate import check_bool, check_cost, check_generator, check_int

MAX_PATHS = 100_000  # default cap on the number of paths enumerate_paths and all_paths build
MAX_LENGTH_DISTRIBUTION = 10**7  # largest L for length_distribution (an (L+1,) float64 tensor)
MAX_COUNT_DIGITS = 10**6  # largest exact count path_count builds (a million digits, under a second)
# largest L for path_count: its exact integer has up to ~L log10(H+1) digits
MAX_COUNT_LAYERS = 10**5
# entries (paths times layers) of the paths sample_paths draws one by one in Python
MAX_DRAWN = 10**7


def check_draws(name: str, count: int, per_path: int) -> None:
    """Refuse, before drawing, ``count`` random paths of ``per_path`` entries each beyond
    :data:`MAX_PATHS`
    paths or :data:`MAX_DRAWN` entries (paths are drawn one by one in Python), naming ``name``."""
    alternative = (
        "draw fewer paths (path_count and length_distribution count them without drawing any)"
    )
    check_cost(name, count, MAX_PATHS, unit="paths", alternative=alternative)
    check_cost(
        name,
        count * per_path,
        MAX_DRAWN,
        unit=f"path entries ({name} x layers)",
        alternative=alternative,
    )


def too_many_paths(L: int, choices: int, cap: int) -> bool:
    """``choices ** L > cap``, decided without building the integer when it is astronomically
    large."""
    if choices <= 1:
        return choices > cap
    if L * math.log10(choices) > math.log10(cap) + 1:
        return True
    return choices**L > cap


_EXACT_DISTRIBUTION = 1000  # up to this L, length_distribution divides exact integers


def path_count(L: int, H: int, length: int, skip: bool = True) -> int:
    """Number of paths of ``length`` heads through ``L`` layers of ``H`` heads: ``C(L, l) H^l``.

    Without skip connections every path has length ``L`` (``H^L`` of them). Exact integer (for
    ``L`` up to ``10**5``: beyond, the integer alone would take megabytes).
    """
    L, H = check_int("L", L, minimum=0, maximum=MAX_COUNT_LAYERS), check_int("H", H)
    length = check_int("length", length, minimum=0)
    digits = (L if not skip else min(length, L)) * math.log10(H) + L * math.log10(2)
    check_cost(
        "H",
        digits,
        MAX_COUNT_DIGITS,
        unit="digits",
        alternative="use length_distribution(L, H) for the fractions, or the count's log10 "
        "(lgamma(L+1) - lgamma(l+1) - lgamma(L-l+1)) / log(10) + l log10(H)",
    )
    if not check_bool("skip", skip):
        return H**L if length == L else 0
    return math.comb(L, length) * H**length if length <= L else 0


def length_distribution(L: int, H: int) -> torch.Tensor:
    """Fraction of paths of each length ``l = 0..L`` with skips: ``C(L,l) H^l / (H+1)^L``.

    A binomial distribution with ``L`` trials and success probability ``H / (H+1)``: each layer
    is crossed through one of ``H`` heads or skipped. Returns a float64 tensor of shape ``(L+1,)``.
    Up to ``L = 1000`` each entry is the exact integer ratio, correctly rounded; beyond, the
    binomial probability in log space, ``exp(lgamma(L+1) - lgamma(l+1) - lgamma(L-l+1) + l log H
    - L log(H+1))`` (relative error about ``L`` times the float64 epsilon; entries below about
    ``1e-308`` are 0). Fast for any size up to ``L = 10**7`` (:data:`MAX_LENGTH_DISTRIBUTION`).
    """
    L = check_int("L", L, minimum=0, maximum=MAX_LENGTH_DISTRIBUTION)
    H = check_int("H", H)
    if L <= _EXACT_DISTRIBUTION:
        total = (H + 1) ** L
        # exact rational -> float: divide big integers with Python's correctly rounded division
        return torch.tensor(
            [math.comb(L, l) * H**l / total for l in range(L + 1)], dtype=torch.float64
        )
    l = torch.arange(L + 1, dtype=torch.float64)
    log_p = (
        math.lgamma(L + 1)
        - torch.lgamma(l + 1)
        - torch.lgamma(L - l + 1)
        + l * math.log(H)
        - L * math.log(H + 1)
    )
    return torch.exp(log_p)


def mean_path_length(L: int, H: int) -> float:
    """Mean path length with skips, ``L H / (H + 1)`` (the binomial mean)."""
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    return L * H / (H + 1)


def head_choices(H: int, skip: bool) -> list:
    """What a path may take in one layer: the skip (``None``, with skip connections) or a head."""
    return ([None] if skip else []) + list(range(H))


def all_paths(L: int, H: int, skip: bool = True, *, max_paths: int = MAX_PATHS):
    """Every path through ``L`` layers of ``H`` heads, in the order :func:`enumerate_paths` uses.

    ``(H+1)^L`` tuples with skips, ``H^L`` without; ``L = 0`` gives the one empty path ``[()]``.
    More than ``max_paths`` (default 100,000) raises ``ValueError`` instead of filling memory.
    """
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    skip = check_bool("skip", skip)
    max_paths = check_int("max_paths", max_paths)
    if too_many_paths(L, H + skip, max_paths):
        raise ValueError(
            f"{L} layers of {H} heads have {H + skip}^{L} paths, more than max_paths={max_paths}"
        )
    return list(product(head_choices(H, skip), repeat=L))


def path_length(path) -> int:
    """Number of heads a path passes through (its layers that are not skipped).

    ``path``: a tuple (or list) with one entry per layer, a head index ``>= 0`` or ``None``.
    """
    if not isinstance(path, (tuple, list)):
        raise TypeError(
            "path must be a tuple of head indices or None, one per layer, got "
            f"{type(path).__name__}"
        )
    for c in path:
        if c is not None:
            check_int("path entry", c, minimum=0)
    return sum(c is not None for c in path)


def sample_paths(
    L: int, H: int, length: int, count: int, *, generator: torch.Generator
) -> list[tuple]:
    """``count`` paths of ``length`` heads through ``L`` layers of ``H`` heads with skips, drawn
    uniformly (with replacement) from the ``C(L, length) H^length`` such paths.

    Each path as :func:`all_paths` writes it: a tuple with one entry per layer, a head index or
    ``None`` for a skip. The layers are a uniform ``length``-subset, each head uniform, from
    ``generator`` (a ``torch.Generator``). Book: chapter "The path decomposition", section 4.
    More than 100,000 paths or ``count * L > 10**7`` (:func:`check_draws`) is refused before
    drawing.
    """
    L, H = check_int("L", L, minimum=0), check_int("H", H)
    length = check_int("length", length, minimum=0, maximum=L)
    count = check_int("count", count)
    check_draws("count", count, L)
    check_generator("generator", generator)
    out = []
    for _ in range(count):
        layers = torch.randperm(L, generator=generator)[:length].tolist()
        heads = torch.randint(H, (length,), generator=generator).tolist()
        path = [None] * L
        for layer, head in zip(layers, heads):
            path[layer] = head
        out.append(tuple(path))
    return out
