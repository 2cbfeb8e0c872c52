"""Exercises of the chapter "Skip connections"."""

import math

import torch

from rankcollapse import paths

from .questions import Question
from .registry import Exercise, Rubric, register


def _skip_residual(P, R, W):
    pbar = P.mean(dim=-2, keepdim=True)
    return R + (P - pbar) @ R @ W


def _cases(seed):
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n, d in ((3, 2), (5, 4), (6, 6)):
        P = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64) * 2, dim=-1)
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        W = torch.randn(d, d, generator=gen, dtype=torch.float64)
        cases.append((P, X - X.mean(dim=0), W))
    return cases


register(
    Exercise(
        id="skip.residual_after_layer",
        reference=_skip_residual,
        cases=lambda: _cases(11),
        hint=(
            "X + P X W = (1 x^T + R) + P (1 x^T + R) W; centre it: the length-zero path keeps R "
            "itself."
        ),
        mistakes=[
            (
                lambda P, R, W: (P - P.mean(dim=-2, keepdim=True)) @ R @ W,
                (
                    "That is the layer without its skip connection: the length-zero path adds R "
                    "itself."
                ),
            ),
            (
                lambda P, R, W: R + P @ R @ W,
                "P R W is not centred: subtract the column means of P (P - 1 pbar^T).",
            ),
        ],
    )
)


def _reserved_map(M, d):
    content, reserved = M.shape
    W = torch.zeros(d, d, dtype=M.dtype)
    W[:content, content:] = M
    return W


def _reserved_map_backwards(M, d):
    content = M.shape[0]
    W = torch.zeros(d, d, dtype=M.dtype)
    W[content:, :content] = M.T
    return W


def _reserved_cases():
    gen = torch.Generator().manual_seed(5)
    return [
        (torch.randn(c, d - c, generator=gen, dtype=torch.float64), d)
        for c, d in ((2, 4), (3, 5), (4, 6))
    ]


register(
    Exercise(
        id="skip.reserved_map",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_reserved_map,
        cases=_reserved_cases,
        hint=(
            "Rows of W are the features a head reads, columns the features it writes: read content "
            "rows, write reserved columns."
        ),
        mistakes=[
            (
                _reserved_map_backwards,
                (
                    "That map reads the reserved features and writes the content ones: it "
                    "overwrites what should be kept."
                ),
            ),
            (
                lambda M, d: torch.nn.functional.pad(M, (0, d - M.shape[1], 0, d - M.shape[0])),
                (
                    "Your block sits on the content columns: X W then changes the content features "
                    "the argument relies on."
                ),
            ),
        ],
    )
)


def _uniform_layer(X, W):
    return X + X.mean(dim=-2, keepdim=True) @ W


def _uniform_cases():
    gen = torch.Generator().manual_seed(7)
    return [
        (
            torch.randn(n, d, generator=gen, dtype=torch.float64),
            torch.randn(d, d, generator=gen, dtype=torch.float64),
        )
        for n, d in ((3, 2), (4, 4), (6, 3))
    ]


register(
    Exercise(
        id="skip.uniform_layer",
        reference=_uniform_layer,
        cases=_uniform_cases,
        hint=(
            "With W_QK = 0 every row of P is 1^T/n, so P X = 1 xbar^T: every token receives the "
            "same row xbar^T W."
        ),
        mistakes=[
            (
                lambda X, W: X + X @ W,
                (
                    "That is P = I (each token attends to itself). Uniform attention averages all "
                    "tokens."
                ),
            ),
            (
                lambda X, W: X.mean(dim=-2, keepdim=True) @ W + 0 * X,
                "Don't forget the skip connection: the layer adds to X.",
            ),
        ],
    )
)


# ------------------------------------------------------------------ build it yourself


def _two_layers(X, P1, P2, W1, W2, skip):
    """Every path term of two multi-head layers (``P_l``: ``(H, n, n)``, ``W_l``: ``(H, d, d)``),
    keyed as
    ``rc.paths.enumerate_paths`` keys them (head index, or ``None`` for a skip)."""
    first = {(h,): P1[h] @ X @ W1[h] for h in range(P1.shape[0])}
    if skip:
        first[(None,)] = X
    out = {}
    for (a,), Y in first.items():
        for h in range(P2.shape[0]):
            out[(a, h)] = P2[h] @ Y @ W2[h]
        if skip:
            out[(a, None)] = Y
    return out


def _two_layers_reversed(X, P1, P2, W1, W2, skip):
    """The product order reversed: P1 P2 on the left and W2 W1 on the right for the paths through
    both."""
    out = _two_layers(X, P1, P2, W1, W2, skip)
    for a in range(P1.shape[0]):
        for b in range(P2.shape[0]):
            out[(a, b)] = P1[a] @ P2[b] @ X @ W2[b] @ W1[a]
    return out


def _two_layers_no_identity(X, P1, P2, W1, W2, skip):
    out = _two_layers(X, P1, P2, W1, W2, skip)
    out.pop((None, None), None)
    return out


def _two_layer_cases():
    gen = torch.Generator().manual_seed(2016)
    cases = []
    for H, n, d, skip in ((2, 4, 3, True), (1, 5, 2, True), (3, 3, 4, True), (2, 4, 3, False)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        P1, P2 = (
            torch.softmax(torch.randn(H, n, n, generator=gen, dtype=torch.float64) * 2, dim=-1)
            for _ in "12"
        )
        W1, W2 = (torch.randn(H, d, d, generator=gen, dtype=torch.float64) for _ in "12")
        cases.append((X, P1, P2, W1, W2, skip))
    return cases


register(
    Exercise(
        id="skip.two_layers",
        reference=_two_layers,
        cases=_two_layer_cases,
        points=2,
        same_role=(paths.enumerate_paths,),
        hint="Expand (I + sum_b P2_b . W2_b)(X + sum_a P1_a X W1_a) (drop the I's without skips): "
        "one term per "
        "choice in each layer, keyed (choice in layer 1, choice in layer 2).",
        mistakes=[
            (
                _two_layers_reversed,
                "Product order reversed: layer 2 mixes the tokens layer 1 produced, so P2 stands "
                "left of P1, and the "
                "value maps act on the right in the order the layers apply them, W1 W2.",
            ),
            (
                _two_layers_no_identity,
                "The length-0 path is missing: with skips the path that skips both layers carries "
                "X through, key "
                "(None, None).",
            ),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)

_STRENGTH = 0.5
_DEPTH = 6


def _strength_verdict():
    """Which law the residual ratio follows at skip strength 0.5: the nearest of the three, in
    log10."""
    from ..explorer import skip_strength_grid

    grid = skip_strength_grid(
        L=_DEPTH, scales=(1.0,), strengths=(0.0, _STRENGTH), n=8, d=16, H=2, samples=2, seed=0
    )
    pure, measured = grid["measured"][0][0][-1], grid["measured"][0][1][-1]
    laws = {"collapse": pure, "geometric": _DEPTH * math.log10(_STRENGTH), "constant": 0.0}
    return min(laws, key=lambda k: abs(laws[k] - measured))


register(
    Question(
        id="skip.predict_strength",
        kind="predict",
        answer=_strength_verdict,
        choices=("collapse", "geometric", "constant"),
        hint=(
            "Split a layer's residual into the skip's part, alpha res(X_l), and attention's part: "
            "which is larger?"
        ),
        mistakes=[
            (
                "collapse",
                "Any skip, even a weak one, keeps a length-zero path: the cascade that makes pure "
                "attention "
                "collapse doubly exponentially never starts.",
            ),
            (
                "constant",
                "Only a full-strength skip (alpha = 1) carries the input's residual undiminished; "
                "at alpha = 1/2 "
                "the skip halves it every layer, and attention adds little.",
            ),
        ],
    )
)


def _length0_relative_residual():
    """The relative residual of the length-0 term (nearest order of magnitude), as fig-skip-init (b)
    draws it."""
    from rankcollapse.paths import length_profile
    from rankcollapse.san import SAN, SANConfig

    X = torch.randn(12, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    net = SAN(SANConfig(n_layers=2, n_heads=2, d_model=16, skip=True), seed=0)
    value = float(length_profile(net, X)["relative_residual"][0])
    return min((1, 0.1, 0.001), key=lambda c: abs(math.log10(c) - math.log10(value)))


register(
    Question(
        id="skip.read_length0",
        kind="read",
        answer=_length0_relative_residual,
        choices=(1, 0.1, 0.001),
        hint="Which term is the length-0 path, and how collapsed are Gaussian tokens?",
        mistakes=[
            (
                0.001,
                "That is where the longest paths end up. The length-0 path is the input X itself: "
                "no attention "
                "matrix mixes it.",
            ),
            (
                0.1,
                (
                    "The length-0 term is X itself, Gaussian tokens, as far from 1 x^T as the "
                    "input: about 1."
                ),
            ),
        ],
    )
)

register(
    Rubric(
        label="ex-skip-prove",
        criteria=(
            (
                1,
                (
                    "The columns C never change: X W_h, hence P_h X W_h, is zero outside the "
                    "columns S; induction."
                ),
            ),
            (
                1,
                "Selecting columns cannot raise the composite norm: the largest column sum is "
                "over fewer "
                "columns, every row sum has fewer terms.",
            ),
            (1, "Centring and column selection commute (left and right multiplication)."),
            (
                1,
                "The chain ||res(X_L)|| >= ||res(X_L)_C|| = ||res(X_C)|| = ||res(X)||, the last "
                "step by "
                "X_S = 0.",
            ),
            (
                1,
                "beta scales with t, so it can be made as small as wanted; the residual may grow "
                "(the "
                "columns S gain what the heads write).",
            ),
        ),
        wrong_turns=(
            "Claiming the residual is unchanged (an equality): the columns S change; 1 point off.",
            (
                "Using the triangle inequality of the composite norm, which is not a norm: the "
                "step is lost."
            ),
            "Forgetting where X_S = 0 enters: the fourth point is lost.",
        ),
    )
)
