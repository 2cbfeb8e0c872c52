"""The toy tasks' networks: an embedding, the book's :class:`rankcollapse.san.SAN`, a readout.

``embedding -> SAN -> readout``, as the official code's ``SANForSequenceClassification``
(a per-token classifier on top of a post-LayerNorm self-attention network with skip
connections), with these differences, each so that the network's output is exactly a sum of
path terms (chapter "Which paths do trained networks use?"):

- the SAN has no biases and its LayerNorm shifts are held at zero (not trained), so the path
  decomposition of ``rc.paths`` has no constant term: the output *is* the sum of its paths;
- the readout standardises each token (LayerNorm without gain or shift, ``eps = 1e-12`` as
  BERT's) before the linear classifier. The official code applies this standardisation only
  when it evaluates a sum of paths; applying it always reads the full model and its
  path-restricted versions the same way;
- no dropout (the official code uses 0.1), so training is deterministic for a seed.

Embeddings as the official code: token ids through a word embedding (plus a learned position
embedding where the task has positions), a linear map and a LayerNorm; points (convex hull)
through ``Linear(2, d)``, GELU, ``Linear(d, d)`` and a LayerNorm. Weights outside the SAN are
drawn as BERT's (normal, standard deviation 0.02, zero biases); the SAN is initialised by
``rc.san``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._validate import (
    as_tokens,
    check_choice,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from ..san import SAN, SANConfig

__all__ = ["ToyConfig", "ToyModel", "standardise", "READOUT_EPS"]

READOUT_EPS = 1e-12  # BERT's layer_norm_eps, as in the official code's path evaluation


@dataclass(frozen=True)
class ToyConfig:
    """Shape of a toy network.

    inputs: ``"tokens"`` (ids below ``vocab``) or ``"points"`` (2-d coordinates).
    positions: learned position embeddings for sequences up to this length (0: none).
    ffn2: points pass through ``Linear, GELU, Linear`` (the official ``--ffn2``), else one Linear.
    embed_ln: LayerNorm after the embedding. n_out: classes (or output coordinates).
    standardise: the readout standardises each token first (see the module docstring).
    skip, mlp, layernorm: passed to :class:`rankcollapse.san.SANConfig`.
    """

    n_layers: int
    n_heads: int
    d_model: int
    n_out: int
    inputs: str = "tokens"
    vocab: int = 0
    positions: int = 0
    ffn2: bool = False
    embed_ln: bool = True
    standardise: bool = True
    skip: bool = True
    mlp: int = 0
    layernorm: str = "post"

    def __post_init__(self):
        check_choice("inputs", self.inputs, ("tokens", "points"))
        check_int("n_out", self.n_out)
        check_int("positions", self.positions, minimum=0)
        if self.inputs == "tokens":
            check_int("vocab", self.vocab)

    def san_config(self, dtype=torch.float32) -> SANConfig:
        return SANConfig(
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_model=self.d_model,
            skip=self.skip,
            mlp=self.mlp,
            layernorm=self.layernorm,
            bias=False,
            dtype=dtype,
        )

    def as_dict(self) -> dict:
        return asdict(self)


def standardise(Y: torch.Tensor, eps: float = READOUT_EPS) -> torch.Tensor:
    """Each token (row) of ``Y`` ``(..., n, d)`` centred and scaled to unit variance over features.

    ``Y`` is checked as tokens (``as_tokens``: float16, meta tensors and NaN are refused by
    name)."""
    check_positive_float("eps", eps, allow_zero=True)
    return _standardise(as_tokens("Y", Y), eps)


def _standardise(Y: torch.Tensor, eps: float = READOUT_EPS) -> torch.Tensor:
    """:func:`standardise` without the checks, for the readout's own representations."""
    Y = Y - Y.mean(dim=-1, keepdim=True)
    return Y / torch.sqrt((Y**2).mean(dim=-1, keepdim=True) + eps)


class ToyModel(nn.Module):
    """``embed -> san -> readout`` for a :class:`ToyConfig`, every weight drawn from ``seed``.

    ``model(X)`` returns logits ``(..., n, n_out)``; ``model.embed(X)`` the SAN's input
    ``(..., n, d)``; ``model.readout(R)`` the logits of any ``(..., n, d)`` representation (the
    SAN's output, or a sum of some of its path terms).
    """

    def __init__(self, config: ToyConfig, *, seed: int, dtype: torch.dtype = torch.float32):
        super().__init__()
        if not isinstance(config, ToyConfig):
            raise TypeError(f"config must be a ToyConfig, got {type(config).__name__}")
        seed = check_seed("seed", seed)
        self.config = c = config
        d = c.d_model
        g = torch.Generator().manual_seed(derive_seed(seed, 1_000_003))  # weights outside the SAN

        def lin(n_in, n_out):
            layer = nn.Linear(n_in, n_out, dtype=dtype)
            with torch.no_grad():
                layer.weight.normal_(0.0, 0.02, generator=g)
                layer.bias.zero_()
            return layer

        def table(rows):
            return nn.Parameter(torch.randn(rows, d, generator=g, dtype=dtype) * 0.02)

        if c.inputs == "tokens":
            self.tokens = table(c.vocab)
            self.pos = table(c.positions) if c.positions else None
            self.embed_in = lin(d, d)
        else:
            self.embed_in = lin(2, d)
        self.embed_ffn2 = lin(d, d) if c.ffn2 else None
        self.embed_norm = nn.LayerNorm(d, dtype=dtype) if c.embed_ln else None
        self.san = SAN(c.san_config(dtype), seed=seed)
        for block in dict.fromkeys(self.san.layers):
            for name in ("ln1_shift", "ln2_shift"):  # held at zero: no constant term in the paths
                if hasattr(block, name):
                    getattr(block, name).requires_grad_(False)
        self.classifier = lin(d, c.n_out)

    @property
    def dtype(self):
        return self.classifier.weight.dtype

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """The SAN's input ``(..., n, d)`` for token ids ``(..., n)`` or points ``(..., n, 2)``."""
        c = self.config
        if c.inputs == "tokens":
            if not isinstance(X, torch.Tensor) or X.dtype != torch.long:
                raise TypeError("X must be a long tensor of token ids (..., n)")
            if X.numel() and (X.min() < 0 or X.max() >= c.vocab):
                raise ValueError(f"X must hold token ids in [0, {c.vocab})")
            E = self.tokens[X]
            if self.pos is not None:
                if X.shape[-1] > c.positions:
                    raise ValueError(
                        f"X has {X.shape[-1]} tokens, more than positions={c.positions}"
                    )
                E = E + self.pos[: X.shape[-1]]
            E = self.embed_in(E)
        else:
            if not isinstance(X, torch.Tensor) or X.shape[-1] != 2:
                raise ValueError("X must be a tensor of points (..., n, 2)")
            E = self.embed_in(X.to(self.dtype))
            if self.embed_ffn2 is not None:
                E = self.embed_ffn2(torch.nn.functional.gelu(E))
        return self.embed_norm(E) if self.embed_norm is not None else E

    def readout(self, R: torch.Tensor) -> torch.Tensor:
        """Logits ``(..., n, n_out)`` of a representation ``R`` ``(..., n, d)``."""
        return self.classifier(_standardise(R) if self.config.standardise else R)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.readout(self.san(self.embed(X)).last_hidden_state)

    def twin(self, dtype: torch.dtype = torch.float64) -> ToyModel:
        """A copy with the same weights in ``dtype`` (float64 for exact path sums)."""
        other = ToyModel(self.config, seed=0, dtype=dtype)
        other.load_state_dict(self.state_dict())
        return other.eval()
