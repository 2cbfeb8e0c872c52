"""Exercises of the chapter "Which paths do trained networks use?"."""

import math

import torch

from rankcollapse.toy.model import standardise

from .registry import Exercise, register

# ------------------------------------------------------------------ one path's term


def _path_term(E, layers, path):
    Y = E
    for (P, sigma, W_V, W_O, gain), c in zip(layers, path):
        Z = Y if c is None else P[:, c] @ Y @ W_V[c] @ W_O[c]
        Y = (Z - Z.mean(-1, keepdim=True)) / sigma.unsqueeze(-1) * gain
    return Y


def _path_term_ln_only_on_heads(E, layers, path):
    Y = E
    for (P, sigma, W_V, W_O, gain), c in zip(layers, path):
        if c is not None:
            Z = P[:, c] @ Y @ W_V[c] @ W_O[c]
            Y = (Z - Z.mean(-1, keepdim=True)) / sigma.unsqueeze(-1) * gain
    return Y


def _path_term_no_centring(E, layers, path):
    Y = E
    for (P, sigma, W_V, W_O, gain), c in zip(layers, path):
        Z = Y if c is None else P[:, c] @ Y @ W_V[c] @ W_O[c]
        Y = Z / sigma.unsqueeze(-1) * gain
    return Y


def _path_term_attention_on_the_right(E, layers, path):
    Y = E
    for (P, sigma, W_V, W_O, gain), c in zip(layers, path):
        Z = Y if c is None else P[:, c].transpose(-1, -2) @ Y @ W_V[c] @ W_O[c]
        Y = (Z - Z.mean(-1, keepdim=True)) / sigma.unsqueeze(-1) * gain
    return Y


def _layers_case(seed, B=2, n=4, d=6, H=2, L=3):
    g = torch.Generator().manual_seed(seed)
    f = dict(generator=g, dtype=torch.float64)
    layers = []
    for _ in range(L):
        P = torch.softmax(torch.randn(B, H, n, n, **f) * 2, dim=-1)
        sigma = torch.rand(B, n, **f) + 0.5
        layers.append(
            (
                P,
                sigma,
                torch.randn(H, d, d // H, **f),
                torch.randn(H, d // H, d, **f),
                torch.rand(d, **f) + 0.5,
            )
        )
    return torch.randn(B, n, d, **f), layers


def _path_cases():
    return [
        (*_layers_case(1), (None, 1, 0)),
        (*_layers_case(2), (0, None, None)),
        (*_layers_case(3), (1, 1, 1)),
    ]


register(
    Exercise(
        id="toy_tasks.path_term",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_path_term,
        cases=_path_cases,
        hint="In every layer the path passes the branch it takes (the input itself, or P_h Y W_V,h "
        "W_O,h) "
        "through the post-LayerNorm's linear part: centre each token, divide by its frozen sigma, "
        "times the gain.",
        mistakes=[
            (
                _path_term_ln_only_on_heads,
                (
                    "The LayerNorm sits after the sum X + SA(X): a skipped layer is normalised "
                    "too, so skips are not the identity."
                ),
            ),
            (
                _path_term_no_centring,
                "LayerNorm first subtracts each token's mean over features; you only scaled.",
            ),
            (
                _path_term_attention_on_the_right,
                (
                    "Attention mixes tokens from the left: row i of P_h Y is the average of the "
                    "rows of Y weighted by row i of P_h."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ one path's accuracy


def _path_accuracy(R, W, b, y):
    return float(((standardise(R) @ W + b).argmax(-1) == y).double().mean())


def _accuracy_cases():
    g = torch.Generator().manual_seed(7)
    f = dict(generator=g, dtype=torch.float64)
    cases = []
    for B, n, d, C, scale in ((3, 5, 6, 4, 1e-3), (4, 6, 8, 3, 1e-2), (2, 7, 5, 5, 1e-3)):
        W, b = torch.randn(d, C, **f), torch.randn(C, **f)
        # small, with a common mean
        R = torch.randn(B, n, d, **f) * scale + torch.randn(d, **f) * scale * 3
        y = ((R - R.mean(-1, keepdim=True)) @ W).argmax(-1)
        y[0] = (y[0] + 1) % C  # not every token right
        cases.append((R, W, b, y))
    return cases


register(
    Exercise(
        id="toy_tasks.path_accuracy",
        reference=_path_accuracy,
        cases=_accuracy_cases,
        hint="Standardise each token of R (subtract its mean over features, divide by its standard "
        "deviation), "
        "apply the classifier, take the arg-max class, and count the tokens where it equals y.",
        mistakes=[
            (
                lambda R, W, b, y: float(((R @ W + b).argmax(-1) == y).double().mean()),
                "A single path's term is far smaller than the full output: without standardising "
                "it first, the "
                "classifier's bias decides every prediction.",
            ),
            (
                lambda R, W, b, y: float(
                    ((standardise(R) @ W + b).argmax(-1) == y).all(-1).double().mean()
                ),
                (
                    "That is the fraction of sequences with every token right; the paper's "
                    "accuracy is per token."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ what a sample sees


def _distinct(L, H, length, k):
    N = math.comb(L, length) * H**length
    return N * (1 - (1 - 1 / N) ** k)


register(
    Exercise(
        id="toy_tasks.distinct_paths",
        reference=_distinct,
        cases=lambda: [(6, 2, 3, 5), (6, 3, 3, 20), (6, 3, 0, 20), (6, 2, 6, 20), (4, 3, 1, 5)],
        hint="There are N = C(L, l) H^l paths of length l, drawn independently and uniformly with "
        "replacement: "
        "a given path is missed by all k draws with probability (1 - 1/N)^k.",
        mistakes=[
            (
                lambda L, H, length, k: float(min(k, math.comb(L, length) * H**length)),
                (
                    "The official code draws paths independently, with replacement: the same path "
                    "can come twice."
                ),
            ),
            (
                lambda L, H, length, k: (H + 1) ** L * (1 - (1 - 1 / (H + 1) ** L) ** k),
                (
                    "The draw is among the paths of length l only, C(L, l) H^l of them, not all "
                    "(H+1)^L."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ which length carries a task


def _shortest(cumulative, full, fraction):
    for l, acc in enumerate(cumulative):
        if acc >= fraction * full:
            return l
    return None


register(
    Exercise(
        id="toy_tasks.shortest_sufficient_length",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_shortest,
        cases=lambda: [
            ([0.3, 0.55, 0.6], 0.6, 0.9),
            ([0.1, 0.5, 0.93, 0.97, 0.98], 0.98, 0.95),
            ([0.2, 0.9, 0.85, 0.99], 0.99, 0.9),
            ([0.5, 0.6, 0.7], 0.8, 0.95),
            ([0.96, 0.9, 1.0], 1.0, 0.95),
        ],
        hint="Walk l = 0, 1, ... through the accuracies of the paths up to each length and return "
        "the first l "
        "at which it reaches fraction * full (None if no length does).",
        mistakes=[
            (
                lambda c, full, fraction: max(range(len(c)), key=lambda l: c[l]),
                (
                    "The question is the shortest sufficient length, not the length of the best "
                    "accuracy."
                ),
            ),
            (
                lambda c, full, fraction: next((l for l, a in enumerate(c) if a >= fraction), None),
                (
                    "Compare with a fraction of the full model's accuracy (fraction * full), not "
                    "with the fraction itself."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ circuits: direct path, heads,
# virtual heads


def _circuit_shares(T):
    """The share of the output's Frobenius norm that each circuit group carries (its sum's norm over
    the output's)."""
    from rankcollapse.paths import circuit_groups

    size = torch.linalg.vector_norm(T.sum(dim=0))
    return {k: float(torch.linalg.vector_norm(v) / size) for k, v in circuit_groups(T).items()}


def _circuit_shifted(T):  # the lengths counted from 1
    size = torch.linalg.vector_norm(T.sum(dim=0))
    parts = {"direct": T[1], "heads": T[2], "virtual": T[3], "rest": T[4:].sum(dim=0)}
    return {k: float(torch.linalg.vector_norm(v) / size) for k, v in parts.items()}


def _circuit_rest_of_norms(T):  # the rest as a sum of norms, not the norm of the sum
    out = _circuit_shares(T)
    size = torch.linalg.vector_norm(T.sum(dim=0))
    out["rest"] = float(sum(torch.linalg.vector_norm(t) for t in T[3:]) / size)
    return out


def _circuit_rest_short(T):  # the rest stops one length early
    out = _circuit_shares(T)
    size = torch.linalg.vector_norm(T.sum(dim=0))
    out["rest"] = float(torch.linalg.vector_norm(T[3:-1].sum(dim=0)) / size)
    return out


def _circuit_cases():
    gen = torch.Generator().manual_seed(2021_12)
    shapes = ((4, (5, 3)), (5, (2, 4, 3)), (7, (6, 4)))
    return [
        (
            torch.randn(L1, *shape, generator=gen, dtype=torch.float64)
            * torch.logspace(0, -1, L1, dtype=torch.float64).reshape(-1, *[1] * len(shape)),
        )
        for L1, shape in shapes
    ]


register(
    Exercise(
        id="toy_tasks.circuit_shares",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_circuit_shares,
        cases=_circuit_cases,
        hint="Group the sums by length: direct = T[0], heads = T[1], virtual heads = T[2], the "
        "rest = "
        "T[3] + ... + T[L]; each share is the Frobenius norm of its group's sum over that of the "
        "output "
        "Y = T[0] + ... + T[L].",
        mistakes=[
            (
                _circuit_shifted,
                "Off by one: the direct path is the length-0 sum, T[0]; the heads are T[1] and the "
                "virtual heads T[2].",
            ),
            (
                _circuit_rest_of_norms,
                "The rest is one sum, T[3] + ... + T[L]: take the norm of the sum, not the "
                "sum of the norms (the terms are not aligned).",
            ),
            (
                _circuit_rest_short,
                "The rest stops one length early: T[3:] runs to the full-depth sum T[L].",
            ),
        ],
    )
)
