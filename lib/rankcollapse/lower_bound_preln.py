"""The book's lower bound with LayerNorm before each branch (pre-LN), and a network reaching it.

A pre-LN layer is ``X' = X + sum_h P_h(N(X)) N(X) W_V,h W_O,h`` (then ``X' + MLP(N_2(X'))``, or
both branches on ``X``: GPT-NeoX's parallel layer), ``N`` a LayerNorm or RMSNorm applied to each
token. The norm puts every token's branch input on a sphere of radius ``sqrt(d)`` times its gain,
whatever the size of the stream, so a branch can move a token's residual by a bounded amount and
no more. With ``b_l = max_i ||res(X_l)_i||_2`` (the largest l2 norm of a token's mean-centred
residual; chapter "A lower bound with skip connections", section 8), ``c = (n - 1)/n`` and ``g``
the largest absolute gain of the norm:

- attention: ``b_{l+1} >= b_l - 2 c g sqrt(d) sum_h omega_h t_h``, ``omega_h = ||W_V,h
  W_O,h||_2`` (times the branch scale), ``t_h = tanh(2 a_h (2 c g sqrt(d))^2 / sqrt(d_qk))`` with
  ``a_h = ||W_Q,h W_K,h^T||_2`` (``t_h = 1`` under a causal or window mask or rotary positions,
  where the attention's rows are not a softmax of one logit matrix plus a row term);
- an MLP: ``b >= b - 2 c g_2 sqrt(d) lip``, ``lip = ||W_1||_2 ||W_2||_2`` times the activation's
  Lipschitz constant (:data:`ACTIVATION_LIP`) and the MLP branch's scale;

so ``b_L >= b_0 - sum_{l<L} delta_l`` (:func:`layer_steps`, :func:`preln_bound`), with no
condition on the weights; relative to the stream's mean token, ``b_L / ||m_L||_2 >= max(0, b_0 -
sum delta_l) / (||m_0||_2 + sum mu_l)``, ``mu_l`` the most a layer can move the mean
(:func:`mean_steps`, :func:`preln_relative_bound`). Two antipodal clusters of tokens lose
exactly ``omega sqrt(d) tanh(eps)`` per layer (:func:`construction`, :func:`antipodal_tokens`),
and reach a residual of exactly 0 at a finite depth: no lower bound positive at every depth holds
for pre-LN networks. Core dependencies only. Book: chapter "A lower bound with skip connections",
section 8.
"""

from __future__ import annotations

import math

import torch

from ._validate import check_elements, check_int, check_positive_float
from .residual import res
from .san import SAN, SANConfig, check_san

__all__ = [
    "ACTIVATION_LIP",
    "residual_l2",
    "preln_constants",
    "layer_steps",
    "preln_bound",
    "mean_steps",
    "preln_relative_bound",
    "antipodal_tokens",
    "construction",
    "construction_step",
    "value_row_sums",
    "random_networks",
    "INITS",
    "standard_init",
]

#: Upper bounds on the activations' Lipschitz constants: ReLU 1; GELU's derivative Phi(x) + x phi(x)
#: peaks at x = sqrt(2) (1.12897), its tanh approximation's at 1.12959 (checked on a grid by the
#: tests).
ACTIVATION_LIP = {"relu": 1.0, "gelu": 1.1290, "gelu_tanh": 1.1297}


def residual_l2(X) -> torch.Tensor:
    """``b = max_i ||res(X)_i||_2``, the largest l2 norm of a token's mean-centred residual;
    ``(..., n, d) -> (...)``."""
    return res(X).norm(dim=-1).amax(-1)


def _check_preln(model) -> SAN:
    cfg = check_san(model).config
    why = [
        s
        for s, bad in (
            ("layernorm='pre'", cfg.layernorm != "pre"),
            ("skip=True", not cfg.skip),
            ("skip_strength=1", cfg.skip_strength != 1),
            ("mlp_skip=True", cfg.mlp and not cfg.skip_mlp),
            ("gated=False", cfg.gated),
            ("attention='dot'", cfg.attention != "dot"),
            ("final_layernorm=False", cfg.final_layernorm),
        )
        if bad
    ]
    if why:
        raise ValueError(
            "model must be a pre-LN network with skip connections (the bound of section 8): it "
            f"needs {', '.join(why)}"
        )
    return model


def _spectral_product(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``||A B||_2`` for ``A`` ``(..., d, k)``, ``B`` ``(..., k, e)``, through the ``(k, k)`` core
    of their QR factors when ``k`` is the smaller side (a head's ``W_V W_O``, ``W_Q W_K^T``)."""
    k = A.shape[-1]
    if k >= min(A.shape[-2], B.shape[-1]):
        return torch.linalg.matrix_norm(A @ B, ord=2)
    RA = torch.linalg.qr(A, mode="r")[1]
    RB = torch.linalg.qr(B.transpose(-1, -2), mode="r")[1]
    return torch.linalg.matrix_norm(RA @ RB.transpose(-1, -2), ord=2)


@torch.no_grad()
def value_row_sums(model) -> torch.Tensor:
    """``Omega_l = sum_h ||W_V,h W_O,h||_inf`` (absolute row sums, times the branch scale) of
    every layer of a core ``SAN``, ``(L,)``: the constant of the theorems of sections 3 and 7, for
    any network (with or without norms)."""
    model = check_san(model)
    out = []
    for block in model.layers:
        w = block.head_weights()
        VO = w["W_V"] @ w["W_O"]
        out.append(model.config.branch_scale * VO.abs().sum(-1).amax(-1).sum())
    return torch.stack(out).to(torch.float64)


@torch.no_grad()
def preln_constants(model) -> dict[str, torch.Tensor]:
    """Each layer's constants for :func:`layer_steps`: ``omega`` and ``a`` ``(L, H)`` (spectral
    norms of every head's ``W_V W_O``, times the branch scale, and ``W_Q W_K^T``), ``g1``, ``g2``
    ``(L,)`` (the largest absolute gain of the attention's and the MLP's norm), ``lip`` ``(L,)``
    (a Lipschitz bound of the MLP branch, 0 without MLP), and ``soft`` (``True`` when the
    attention is a softmax of one logit matrix per head: no mask, no rotary positions)."""
    cfg = _check_preln(model).config
    omega, a, g1, g2, lip = [], [], [], [], []
    for block in model.layers:
        w = block.head_weights()
        omega.append(cfg.branch_scale * _spectral_product(w["W_V"], w["W_O"]))
        a.append(_spectral_product(w["W_Q"], w["W_K"].transpose(-1, -2)))
        g1.append(block.ln1_gain.abs().max())
        if cfg.mlp:
            g2.append(block.ln2_gain.abs().max())
            norms = [
                torch.linalg.matrix_norm(block.W_1, ord=2),
                torch.linalg.matrix_norm(block.W_2, ord=2),
            ]
            lip.append(cfg.mlp_branch_scale * ACTIVATION_LIP[cfg.activation] * norms[0] * norms[1])
        else:
            g2.append(torch.zeros((), dtype=cfg.dtype))
            lip.append(torch.zeros((), dtype=cfg.dtype))
    soft = not (cfg.causal or cfg.window or cfg.rotary)
    stack = lambda v: torch.stack(v).to(torch.float64)  # noqa: E731
    return dict(
        omega=stack(omega), a=stack(a), g1=stack(g1), g2=stack(g2), lip=stack(lip),
        soft=torch.tensor(soft), d=torch.tensor(cfg.d_model), d_qk=torch.tensor(cfg.d_qk),
    )  # fmt: skip


def layer_steps(model, n: int) -> torch.Tensor:
    """``delta_l``, ``(L,)``: the most a pre-LN layer can take off ``b = max_i ||res(X)_i||_2`` on
    ``n`` tokens, whatever its input (the module docstring's sum of the attention's and the MLP's
    terms). Float64."""
    n = check_int("n", n, minimum=2)
    k = preln_constants(model)
    c, root_d = (n - 1) / n, math.sqrt(int(k["d"]))
    beta = 2 * c * k["g1"] * root_d  # the largest l2 norm of a centred row of N(X)
    if bool(k["soft"]):
        t = torch.tanh(2 * k["a"] * beta[:, None] ** 2 / math.sqrt(int(k["d_qk"])))
    else:
        t = torch.ones_like(k["a"])
    attention = 2 * c * k["g1"] * root_d * (k["omega"] * t).sum(-1)
    return attention + 2 * c * k["g2"] * root_d * k["lip"]


def preln_bound(model, X) -> torch.Tensor:
    """The bound of section 8 for a pre-LN ``SAN`` on ``X`` ``(n, d)`` or ``(..., n, d)``: ``(L+1,
    ...)``, entry ``l`` equal to ``max(0, b_0 - delta_0 - .. - delta_{l-1})`` (:func:`layer_steps`),
    a lower bound on ``max_i ||res(X_l)_i||_2``. Refused (``ValueError``) for anything but a pre-LN
    network with skips (LayerNorm or RMSNorm, any heads, masks, biases, a plain MLP)."""
    X = _check_preln(model).check_input(X)
    steps = layer_steps(model, X.shape[-2])
    b0 = residual_l2(X).to(torch.float64)
    spent = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(steps, 0)])
    return torch.clamp(b0.unsqueeze(0) - spent.view(-1, *([1] * b0.ndim)), min=0)


@torch.no_grad()
def mean_steps(model) -> torch.Tensor:
    """``mu_l``, ``(L,)``: the most a pre-LN layer can move the stream's mean token (in l2),
    whatever its input. Every row a branch reads lies within ``y = ||g||_inf sqrt(d) + ||shift||_2``
    of 0 (the norm's sphere), every row it writes is an average of such rows mapped linearly (or an
    MLP of one, whose activation has ``act(0) = 0``), and a mean of rows is at most their largest:
    attention ``sum_h (omega_h y + ||b_V,h W_O,h||_2) + ||b_O||_2`` (times the branch scale), MLP
    ``lip ||W_2||_2 (||W_1||_2 y_2 + ||b_1||_2) + ||b_2||_2`` (times its scale)."""
    cfg = _check_preln(model).config
    k, root_d, out = preln_constants(model), math.sqrt(cfg.d_model), []
    norm = lambda t: 0.0 if t is None else float(torch.linalg.vector_norm(t))  # noqa: E731
    for l, block in enumerate(model.layers):
        y = float(k["g1"][l]) * root_d + norm(getattr(block, "ln1_shift", None))
        mu = y * float(k["omega"][l].sum())
        if block.b_V is not None:
            bV = block.b_V.repeat_interleave(cfg.group, 0)[:, None, :]  # (H, 1, dh)
            mu += cfg.branch_scale * float(torch.linalg.vector_norm(bV @ block.W_O, dim=-1).sum())
        mu += cfg.branch_scale * norm(block.b_O)
        if cfg.mlp:
            y2 = float(k["g2"][l]) * root_d + norm(getattr(block, "ln2_shift", None))
            W1, W2 = (float(torch.linalg.matrix_norm(W, ord=2)) for W in (block.W_1, block.W_2))
            inner = ACTIVATION_LIP[cfg.activation] * (W1 * y2 + norm(block.b_1))
            mu += cfg.mlp_branch_scale * (W2 * inner + norm(block.b_2))
        out.append(mu)
    return torch.tensor(out, dtype=torch.float64)


def preln_relative_bound(model, X) -> torch.Tensor:
    """A lower bound on ``b_l / ||m_l||_2`` (``m_l`` the stream's mean token) for a pre-LN ``SAN``
    on ``X`` ``(n, d)`` or ``(..., n, d)``: ``(L+1, ...)``, entry ``l`` equal to ``max(0, b_0 -
    sum delta) / (||m_0||_2 + sum mu)`` over the first ``l`` layers (:func:`layer_steps`,
    :func:`mean_steps`); ``inf`` where the denominator is 0 and the numerator positive, 0 where both
    are. Refused as :func:`preln_bound` refuses."""
    X = _check_preln(model).check_input(X)
    absolute = preln_bound(model, X)
    m0 = torch.linalg.vector_norm(X.to(torch.float64).mean(-2), dim=-1)
    spent = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(mean_steps(model), 0)])
    den = m0.unsqueeze(0) + spent.view(-1, *([1] * m0.ndim))
    ratio = absolute / torch.where(den > 0, den, 1.0)
    return torch.where(den > 0, ratio, torch.where(absolute > 0, math.inf, 0.0))


def antipodal_tokens(n: int, d: int, b0: float) -> torch.Tensor:
    """``n`` tokens (``n`` even) in two clusters ``+r`` and ``-r``, ``r`` with features summing to
    0 and ``||r||_2 = b0``: ``(n, d)``, float64, mean token 0 (``d >= 2``)."""
    n, d = check_int("n", n, minimum=2), check_int("d", d, minimum=2)
    if n % 2:
        raise ValueError(f"n must be even (two clusters of n/2 tokens), got {n}")
    check_elements("n * d", n * d, alternative="use fewer tokens")
    b0 = check_positive_float("b0", b0)
    r = torch.zeros(d, dtype=torch.float64)
    r[0], r[1] = 1.0, -1.0
    r = r * (b0 / r.norm())
    sign = torch.tensor([1.0, -1.0], dtype=torch.float64).repeat_interleave(n // 2)
    return sign[:, None] * r


def construction(L: int, d: int, omega: float, a: float, ln_eps: float = 1e-12) -> SAN:
    """A pre-LN ``SAN`` of depth ``L``, one head of width ``d`` (``d_qk = d``): ``W_Q = -a I``,
    ``W_K = I`` (every token attends away from its own cluster), ``W_V = omega I``, ``W_O = I``,
    LayerNorm gain 1, shift 0, no MLP. On :func:`antipodal_tokens` each layer takes exactly
    :func:`construction_step` off ``max_i ||res(X)_i||_2`` while the residual is larger than it
    (chapter "A lower bound with skip connections", section 8)."""
    L, d = check_int("L", L), check_int("d", d, minimum=2)
    omega = check_positive_float("omega", omega)
    a = check_positive_float("a", a, allow_zero=True)
    cfg = SANConfig(
        n_layers=L, n_heads=1, d_model=d, d_qk=d, d_v=d, skip=True, layernorm="pre",
        ln_eps=ln_eps,
    )  # fmt: skip
    eye = torch.eye(d, dtype=torch.float64)[None]
    layer = {"W_Q": -a * eye, "W_K": eye, "W_V": omega * eye, "W_O": eye}
    return SAN.from_weights(
        cfg,
        [
            dict(layer, ln1_gain=torch.ones(d, dtype=torch.float64),
                 ln1_shift=torch.zeros(d, dtype=torch.float64))
            for _ in range(L)
        ],
    )  # fmt: skip


def construction_step(d: int, omega: float, a: float) -> float:
    """``omega sqrt(d) tanh(a d / sqrt(d))``: what :func:`construction` takes off the residual of
    :func:`antipodal_tokens` per layer (with ``ln_eps`` negligible against the tokens' size)."""
    d = check_int("d", d, minimum=2)
    omega, a = check_positive_float("omega", omega), check_positive_float("a", a, allow_zero=True)
    return omega * math.sqrt(d) * math.tanh(a * d / math.sqrt(d))


def _norm(X, gain, shift, eps):
    Z = X - X.mean(-1, keepdim=True)
    return Z / torch.sqrt((Z**2).mean(-1, keepdim=True) + eps) * gain + shift


def random_networks(count: int, *, seed: int, batch: int = 50, max_n: int = 8, max_d: int = 12,
                    max_H: int = 3, max_L: int = 16):  # fmt: skip
    """Random pre-LN networks with skips, checked against :func:`preln_bound` in batches: yields
    ``(measured, bound)``, each ``(B, L+1)``, ``max_i ||res(X_l)_i||_2`` from a batched float64
    forward pass (this function's own, written apart from the core ``SAN``, whose networks the
    tests check separately) and the bound from the same weights.

    Per batch: ``n`` in ``2..max_n`` tokens, width ``d`` (a multiple of the ``H`` heads, at most
    ``max_d``), depth in ``1..max_L``, an MLP of width ``2 d`` (ReLU) in half the batches; per
    network: Gaussian weights, the query/key maps and the value maps each scaled log-uniformly
    over four decades, the norms' gains Gaussian around 1 and their shifts Gaussian, inputs
    Gaussian with a residual and a mean token log-uniform over four decades (a fifth of them two
    antipodal clusters, the construction's input).
    """
    count, batch = check_int("count", count), check_int("batch", batch)
    max_n, max_d = check_int("max_n", max_n, minimum=2), check_int("max_d", max_d, minimum=2)
    max_H, max_L = check_int("max_H", max_H), check_int("max_L", max_L, maximum=4096)
    check_elements("batch * max_L * max_d**2 * 8", batch * max_L * max_d**2 * 8,
                   alternative="use smaller batches or networks")  # fmt: skip
    g = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    f64 = dict(generator=g, dtype=torch.float64)
    ri = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    logu = lambda *s: 10 ** (4 * torch.rand(*s, **f64) - 2)  # noqa: E731
    done = 0
    while done < count:
        B = min(batch, count - done)
        H = ri(1, max_H)
        lo = 1 if H > 1 else 2  # d = H dh >= 2 (antipodal tokens need two dimensions)
        dh = ri(lo, max(lo, max_d // H))
        n, d, L, m = ri(2, max_n), H * dh, ri(1, max_L), 2 * H * dh * ri(0, 1)
        shapes = (("Q", (d, dh)), ("K", (d, dh)), ("V", (d, dh)), ("O", (dh, d)))
        w = {k: torch.randn(B, L, H, *s, **f64) / math.sqrt(s[0]) for k, s in shapes}
        w["Q"] = w["Q"] * logu(B, 1, 1, 1, 1)
        w["V"] = w["V"] * logu(B, 1, 1, 1, 1)
        g1, s1 = 1 + 0.3 * torch.randn(B, L, d, **f64), 0.3 * torch.randn(B, L, d, **f64)
        g2, s2 = 1 + 0.3 * torch.randn(B, L, d, **f64), 0.3 * torch.randn(B, L, d, **f64)
        W1 = torch.randn(B, L, d, max(m, 1), **f64) / math.sqrt(d) * logu(B, 1, 1, 1) * (m > 0)
        W2 = torch.randn(B, L, max(m, 1), d, **f64) / math.sqrt(max(m, 1))
        X = torch.randn(B, n, d, **f64) * logu(B, 1, 1) + torch.randn(B, 1, d, **f64) * logu(
            B, 1, 1
        )
        if n % 2 == 0:
            idx = torch.arange(0, B, 5)
            X[idx] = antipodal_tokens(n, d, 1.0) * logu(len(idx), 1, 1)
        hidden = [X]
        for l in range(L):
            Y = _norm(X, g1[:, l, None], s1[:, l, None], 1e-5)[:, None]  # (B, 1, n, d)
            q, k, v = (Y @ w[c][:, l] for c in "QKV")
            P = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)
            X = X + ((P @ v) @ w["O"][:, l]).sum(1)
            if m:
                Z = _norm(X, g2[:, l, None], s2[:, l, None], 1e-5)
                X = X + torch.relu(Z @ W1[:, l]) @ W2[:, l]
            hidden.append(X)
        measured = torch.stack([residual_l2(h) for h in hidden], -1)
        c, root_d = (n - 1) / n, math.sqrt(d)
        omega = torch.linalg.matrix_norm(w["V"] @ w["O"], ord=2)  # (B, L, H)
        a = torch.linalg.matrix_norm(w["Q"] @ w["K"].transpose(-1, -2), ord=2)
        gmax1, gmax2 = g1.abs().amax(-1), g2.abs().amax(-1)  # (B, L)
        beta = 2 * c * gmax1 * root_d
        t = torch.tanh(2 * a * beta[..., None] ** 2 / math.sqrt(dh))
        step = 2 * c * gmax1 * root_d * (omega * t).sum(-1)
        if m:
            lip = torch.linalg.matrix_norm(W1, ord=2) * torch.linalg.matrix_norm(W2, ord=2)
            step = step + 2 * c * gmax2 * root_d * lip
        spent = torch.cat([torch.zeros(B, 1, dtype=torch.float64), step.cumsum(-1)], -1)
        yield measured, torch.clamp(measured[:, :1] - spent, min=0)
        done += B


INITS = ("library", "pytorch", "gpt2")


def standard_init(d: int, init: str, *, head_width: int = 64, mlp: bool = True, seed: int = 0,
                  n_layers: int = 12) -> SAN:  # fmt: skip
    """One pre-LN layer of width ``d`` (heads of width ``head_width``, an MLP of width ``4 d``)
    initialised as ``init`` does: ``"library"`` (:class:`~rankcollapse.san.SAN`'s, standard
    deviation ``1/sqrt(fan_in)``), ``"pytorch"`` (``nn.MultiheadAttention``: Xavier-uniform over
    the ``(3 d, d)`` input projection, ``U(+-1/sqrt(d))`` for the output projection and
    ``nn.Linear``'s for the MLP) or ``"gpt2"`` (normal with standard deviation 0.02, the output
    projections ``0.02/sqrt(2 n_layers)``). Gains 1, shifts and biases 0 (no bias maps)."""
    d, head_width = check_int("d", d), check_int("head_width", head_width)
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if d % head_width:
        raise ValueError(f"d must be a multiple of head_width = {head_width}, got {d}")
    H, m = d // head_width, 4 * d if mlp else 0
    cfg = SANConfig(n_layers=1, n_heads=H, d_model=d, d_qk=head_width, d_v=head_width, skip=True,
                    layernorm="pre", mlp=m, activation="gelu_tanh")  # fmt: skip
    if init == "library":
        return SAN(cfg, seed=seed)
    g = torch.Generator().manual_seed(seed)
    f64 = dict(generator=g, dtype=torch.float64)
    uniform = lambda bound, *s: (2 * torch.rand(*s, **f64) - 1) * bound  # noqa: E731
    normal = lambda std, *s: torch.randn(*s, **f64) * std  # noqa: E731
    shapes = {"W_Q": (H, d, head_width), "W_K": (H, d, head_width), "W_V": (H, d, head_width),
              "W_O": (H, head_width, d), "W_1": (d, m), "W_2": (m, d)}  # fmt: skip
    if not mlp:
        shapes = {k: v for k, v in shapes.items() if k not in ("W_1", "W_2")}
    if init == "pytorch":
        inputs = ("W_Q", "W_K", "W_V")
        draw = {k: uniform(math.sqrt(6 / (4 * d)), *s) for k, s in shapes.items() if k in inputs}
        draw["W_O"] = uniform(1 / math.sqrt(d), *shapes["W_O"])
        if mlp:
            draw["W_1"], draw["W_2"] = (
                uniform(1 / math.sqrt(d), d, m),
                uniform(1 / math.sqrt(m), m, d),
            )
    else:
        out = 0.02 / math.sqrt(2 * check_int("n_layers", n_layers))
        draw = {k: normal(out if k in ("W_O", "W_2") else 0.02, *s) for k, s in shapes.items()}
    ones, zeros = torch.ones(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    draw.update(ln1_gain=ones, ln1_shift=zeros)
    if mlp:
        draw.update(ln2_gain=ones, ln2_shift=zeros)
    return SAN.from_weights(cfg, [draw])
