"""Rubrics of the explain questions (and the two proofs that were labelled explain) that had
none: each criterion is one thing the chapter's model answer says a good answer does, 1 point,
2 for a step that carries the argument (the points rule: ``rankbook.checks``)."""

from __future__ import annotations

from .registry import Rubric, register

_RUBRICS = {
    "ex-collapse-explain": (
        (
            1,
            "States what is guaranteed: an upper bound on the residual that falls doubly "
            "exponentially, under its condition sqrt(c) ||res(X)|| < 1 (c < 1 gives it only for "
            "inputs with ||res(X)|| <= 1).",
        ),
        (
            1,
            "Says that an upper bound is not an estimate: loose by orders of magnitude, it does "
            "not tell how fast the residual actually falls.",
        ),
        (
            1,
            "Says that the condition is sufficient, not necessary: networks that break it still "
            "collapse, and the theorem says nothing about them (nor about skips, MLPs, "
            "LayerNorm).",
        ),
    ),
    "ex-skip-explain": (
        (
            1,
            "Says why it is vacuous: every layer's factor is at least one, so the bound can only "
            "grow with depth and never shows the residual falling (the growth is this proof's "
            "triangle inequality).",
        ),
        (
            1,
            "Says why no bound in beta and ||res(X)|| can do better than ||res(X)||: networks of "
            "arbitrarily small beta keep their residual (the preserving construction), so the "
            "question needs a lower bound.",
        ),
    ),
    "ex-lb-explain": (
        (
            2,
            "The step: with x = k b^2 in [0, 1/3], 1/b'^2 <= (1/b^2)(1 - x)^-2; (1 - x)^-2 is "
            "convex, so on [0, 1/3] it lies below its chord 1 + (15/4) x; hence 1/b'^2 <= 1/b^2 "
            "+ (15/4) k.",
        ),
        (
            1,
            "Why a second case: for k b^2 > 1/3 the cubic estimate is useless; the other branch "
            "keeps at least 1 - 2 Omega of the residual per layer, a positive fraction only when "
            "Omega < 1/2, so a large residual shrinks at most geometrically until the first case "
            "applies.",
        ),
        (
            1,
            "Why the bound on Omega is needed at all: with Omega >= 1 the value maps can write "
            "-R and a layer can cancel the skip, removing the residual.",
        ),
    ),
    "ex-toy-explain": (
        (
            1,
            "When they disagree: k random paths are a small, noisy sample of the length's paths "
            "(with repeats); where many paths contribute a little each it understates the "
            "length, and it can miss the few paths that do the work.",
        ),
        (
            1,
            "The exact evaluation (all paths of the length, the attention frozen at the full "
            "model's) is what the decomposition says the length contributes: the better answer.",
        ),
        (
            1,
            "Neither shows an ensemble of independent networks: the paths share the full "
            "model's attention (and LayerNorm scales), and a sum of paths sufficing is not each "
            "path solving the task.",
        ),
    ),
    "ex-mlp-explain": (
        (
            1,
            "The mechanism: not the bound nor a gain on the tokens' differences (a bias-free "
            "ReLU MLP is homogeneous); a larger MLP enlarges the next attention layer's input, "
            "the logits grow quadratically, attention sharpens and averages less.",
        ),
        (
            1,
            "Why the same MLPs are sensitive: with large logits a small relative change of the "
            "input moves the softmax's weights a lot (a token can switch which token it "
            "copies); the scale-free measures (relative sensitivity, noise-to-signal) show it, "
            "not the raw variance.",
        ),
        (
            1,
            "Why a price: the slower collapse is paid in sensitivity, and names the alternative "
            "that needs no sharp attention (skip connections, the length-zero path).",
        ),
    ),
    "ex-ln-explain": (
        (
            1,
            "Separates rank from residual: LayerNorm (right multiplications and a row scaling) "
            "cannot raise the rank, but collapse is the distance to 1 x^T, which a rank-one "
            "matrix with balanced signs keeps.",
        ),
        (
            1,
            "Uses the balanced example: rescaling each token LayerNorm undoes the shrinking "
            "attention applies, so the residual is kept there.",
        ),
        (
            1,
            "Says what is left of 'cannot help': LayerNorm cannot create directions, yet can "
            "keep tokens apart in special constructions, not in general (random inputs without "
            "skips still collapse); the claim is stronger than the rank argument proves.",
        ),
    ),
    "ex-real-explain": (
        (
            1,
            "Says the collapsing curves are of networks nobody uses: the real weights with the "
            "skip connections removed; the models as trained keep their skips and do not "
            "collapse at their depths.",
        ),
        (
            1,
            "Says what the figure does show: the paper's claim about its model (attention "
            "without skips collapses) at these depths, not a theorem's condition checked on "
            "these weights nor a lower bound with skips.",
        ),
        (
            1,
            "Names one difference from the paper that could move the numbers (the pretrained "
            "model, the text, the token ids at initialisation, the surgery against the clean "
            "ablation).",
        ),
    ),
    "ex-limits-explain-meanings": (
        (
            1,
            "Names the left (token) multiplication by a row-stochastic P against the right "
            "(feature) multiplication by W: averaging rows removes the tokens' differences "
            "whatever the weights' spectra.",
        ),
        (
            1,
            "Names the two axes: the token residual is depth in one forward pass, the stable "
            "rank of the weights is training time.",
        ),
        (
            1,
            "Names the length-0 path: with a skip, X passes through untouched, so low stable "
            "rank weights need not collapse the tokens.",
        ),
    ),
    "ex-later-explain-particles": (
        (
            2,
            "The step as a layer: x_i + dt P(sum_j A_ij x_j), then the normalisation: a skip "
            "carrying X and an attention branch of weight lambda = dt with the identity as "
            "value map, the projection and normalisation in LayerNorm's place.",
        ),
        (
            1,
            "The proposition's constants are of order dt, so a step loses at most a fraction "
            "a dt of the relative residual, a guarantee against doubly exponential collapse.",
        ),
        (
            1,
            "Why the tokens still cluster: over a time t there are t/dt steps and "
            "(1 - a dt)^(t/dt) ~ exp(-a t) still tends to zero: the proposition allows a "
            "single-exponential loss.",
        ),
    ),
}

# the common wrong turns of the two proofs, each with what it costs
_WRONG_TURNS = {
    "ex-lb-explain": (
        "Bounding (1 - x)^-2 by its tangent at 0, 1 + 2x: the tangent lies below a convex "
        "function, so it is no upper bound (the step's 2 points lost).",
        "Using the first case for every residual, or the second without Omega < 1/2 (1 - 2 "
        "Omega <= 0 keeps nothing): the second case's point lost.",
    ),
    "ex-later-explain-particles": (
        "Calling the projection a skip connection: the skip is the x_i the step starts from; "
        "the projection keeps tokens on the sphere (1 point of the first step lost).",
        "Reading the proposition as ruling out all collapse: it bounds the loss per layer, "
        "and t/dt layers compound it (the last point lost).",
    ),
}

for _label, _criteria in _RUBRICS.items():
    register(Rubric(label=_label, criteria=_criteria, wrong_turns=_WRONG_TURNS.get(_label, ())))
