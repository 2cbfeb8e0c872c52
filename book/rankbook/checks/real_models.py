"""Exercises of the chapter "Real transformers"."""

import torch

from rankcollapse import residual

from .questions import Question
from .registry import Exercise, Rubric, register

# ----------------------------------------------------------------------- attention along a path


def _path_cases():
    gen = torch.Generator().manual_seed(3404)
    cases = []
    for L, H, n, path in (
        (3, 2, 4, ((0, 1), (2, 0))),
        (4, 3, 5, ((0, 2), (1, 0), (3, 1))),
        (5, 2, 6, ((1, 1), (2, 0), (3, 1), (4, 0))),
        (2, 2, 3, ((1, 0),)),
        (2, 2, 3, ()),
    ):
        A = torch.softmax(3 * torch.randn(L, H, n, n, generator=gen, dtype=torch.float64), dim=-1)
        cases.append((A, path))
    return cases


def _path_product(A, path):
    P = torch.eye(A.shape[-1], dtype=A.dtype)
    for layer, head in path:
        P = A[layer, head] @ P
    return P


def _reversed(A, path):
    P = torch.eye(A.shape[-1], dtype=A.dtype)
    for layer, head in path:
        P = P @ A[layer, head]
    return P


def _no_identity(A, path):
    if not path:
        return torch.zeros(A.shape[-1], A.shape[-1], dtype=A.dtype)
    return _path_product(A, path)


register(
    Exercise(
        id="real_models.path_product",
        reference=_path_product,
        cases=_path_cases,
        partial=True,  # forgetting the empty path's identity fails that case only
        hint=(
            "Layer l mixes the tokens that layer l-1 produced: each new attention matrix goes on "
            "the left."
        ),
        mistakes=[
            (
                _reversed,
                "Is the later layer's attention on the left? P = P @ A multiplies in the official "
                "code's (reversed) order; "
                "the path decomposition needs A^(l_k) ... A^(l_1).",
            ),
            (
                _no_identity,
                (
                    "A path through no head carries X unchanged: its product is the identity, not "
                    "zero."
                ),
            ),
        ],
    )
)

# --------------------------------------------------------------- residual over real tokens only


def _mask_cases():
    gen = torch.Generator().manual_seed(3405)
    cases = []
    for n, d, real in ((6, 4, 4), (8, 3, 8), (10, 5, 3), (7, 7, 6)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64) + 0.5
        X[real:] = 3.0 * torch.randn(
            n - real, d, generator=gen, dtype=torch.float64
        )  # padding rows: junk
        mask = torch.zeros(n, dtype=torch.bool)
        mask[:real] = True
        cases.append((X, mask))
    return cases


def _masked_rr(X, mask):
    return float(residual.relative_residual(X[mask]))


def _all_rows(X, mask):
    return float(residual.relative_residual(X))


def _mean_over_all(X, mask):
    R = X - X.mean(dim=0)
    return float(residual.composite_norm(R[mask]) / residual.composite_norm(X[mask]))


def _zeroed(X, mask):
    Xz = X * mask[:, None]
    return float(residual.relative_residual(Xz))


register(
    Exercise(
        id="real_models.masked_residual",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_masked_rr,
        cases=_mask_cases,
        hint=(
            "Keep the real rows X[mask] first; then centre with their column mean and take the "
            "composite norms."
        ),
        mistakes=[
            (
                _all_rows,
                (
                    "The padding rows are not tokens of the sentence: leave them out of the "
                    "residual entirely."
                ),
            ),
            (
                _mean_over_all,
                "The centre must be the mean of the real tokens only; padding rows move the mean.",
            ),
            (
                _zeroed,
                (
                    "Zeroing the padding rows still leaves them in the mean (as zeros) and in the "
                    "row count: drop them."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)


def _uniform_and_sharp(length=3):
    """Median relative residual of products of ``length`` random attention matrices, near-uniform
    and sharp."""
    from rankcollapse.real import path_profile

    logits = torch.randn(
        6, 1, 4, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    return {
        name: path_profile(torch.softmax(scale * logits, dim=-1), n_paths=10, seed=0)[:, length - 1]
        .median()
        .item()
        for name, scale in (("near-uniform", 0.1), ("sharp", 5.0))
    }


def _closer_to_rank_one():
    med = _uniform_and_sharp()
    if max(med.values()) < 2 * min(med.values()):  # within a factor of two: the same
        return "the same"
    return min(med, key=med.get)


register(
    Question(
        id="real_models.predict_sharpness",
        kind="predict",
        answer=_closer_to_rank_one,
        choices=("near-uniform", "sharp", "the same"),
        hint="What is the product of uniform attention matrices, and how far is it from 1 x^T?",
        mistakes=[
            (
                "sharp",
                "A sharp attention matrix is close to a 0/1 matrix sending different tokens to "
                "different tokens: "
                "its rows differ, and so do those of products of a few of them.",
            ),
            (
                "the same",
                "Every product of row-stochastic matrices is row-stochastic, but how far its rows "
                "are from each "
                "other depends on the factors: uniform rows are already equal.",
            ),
        ],
    )
)


def _minilm_longest_path():
    from rankcollapse.real import spec

    return spec("all-MiniLM-L6-v2").config["num_hidden_layers"]


register(
    Question(
        id="real_models.read_longest_path",
        kind="read",
        answer=_minilm_longest_path,
        rtol=0.0,
        hint="A path passes through at most one head in each layer.",
        mistakes=[
            (
                12,
                "12 is MiniLM's number of heads per layer; a path's length counts the layers "
                "where it goes "
                "through a head.",
            ),
            (72, "A path takes one head per layer at most, not every head of every layer."),
            (
                7,
                (
                    "The hidden states count L + 1 (the input too); a path's length counts heads, "
                    "at most one per layer."
                ),
            ),
        ],
    )
)


register(
    Rubric(
        label="ex-real-prove",
        criteria=(
            (
                2,
                "For a zero-sum v: split v into its positive and negative parts of equal sum s "
                "and write v^T P "
                "as a weighted sum of row differences, weights adding up to s.",
            ),
            (1, "tau(PQ) <= tau(P) tau(Q): a row difference of PQ is a zero-sum vector times Q."),
            (1, "tau(P) <= 1 - n delta from sum |a - b| = 2 - 2 sum min(a, b)."),
            (
                1,
                (
                    "The product's rows within 2 (1 - n delta)^m of each other, hence close to 1 "
                    "x^T row by row."
                ),
            ),
            (
                1,
                "Exponential, not doubly exponential: fixed matrices contract by a fixed factor, "
                "while in a "
                "network the attention itself approaches rank one as the tokens do; sharp "
                "attention makes "
                "delta tiny and the bound empty.",
            ),
        ),
        wrong_turns=(
            (
                "Using ||v^T P||_1 <= ||v||_1 (P's operator norm is 1): no contraction; the first "
                "criterion is lost."
            ),
            "Claiming a doubly exponential rate from part 4: the last criterion is lost.",
            "Forgetting that delta <= 1/n, so that 1 - n delta >= 0.",
        ),
    )
)
