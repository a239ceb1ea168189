"""An independent, deliberately naive reference for the probe engine.

It shares no code with :mod:`swapkl`: a variant is built by reordering (or dropping)
entries of the model's own ``nn.ModuleList`` of blocks, ``config.num_hidden_layers`` is
set to the new length, and the stock transformers forward runs with ``use_cache=False``
(blocks keep their ``layer_idx``; without a KV cache it is never read). KL and NLL are
computed here, in float64, straight from the full logits. The model is always restored,
even when the forward raises.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch


def base_order(n_layers: int) -> list[int]:
    return list(range(n_layers))


def replacement_order(i: int, j: int, n_layers: int) -> list[int]:
    """Slot i runs block j (block i does not run)."""
    order = base_order(n_layers)
    order[i] = j
    return order


def interchange_order(i: int, j: int, n_layers: int) -> list[int]:
    order = base_order(n_layers)
    order[i], order[j] = order[j], order[i]
    return order


def deletion_order(i: int, n_layers: int) -> list[int]:
    return [b for b in range(n_layers) if b != i]


def block_list(model) -> torch.nn.ModuleList:
    base = model.base_model
    if model.config.model_type == "opt":
        return base.decoder.layers
    return base.h if model.config.model_type in ("gpt2", "bloom") else base.layers


@contextmanager
def reordered(model, order: list[int]):
    """Temporarily make ``model`` run blocks ``order`` (indices into its original block list)."""
    layers = block_list(model)
    with substituted(model, [layers[b] for b in order]):
        yield model


@contextmanager
def substituted(model, modules: list[torch.nn.Module]):
    """Temporarily make ``model`` run ``modules`` as its blocks (its own, reordered, or changed copies)."""
    layers = block_list(model)
    original = list(layers)
    n_orig = model.config.num_hidden_layers
    try:
        # rebuild the ModuleList in place: the given module objects, in the given order
        for k in range(len(layers) - 1, -1, -1):
            del layers[k]
        for m in modules:
            layers.append(m)
        model.config.num_hidden_layers = len(modules)
        yield model
    finally:
        for k in range(len(layers) - 1, -1, -1):
            del layers[k]
        for m in original:
            layers.append(m)
        model.config.num_hidden_layers = n_orig


@torch.inference_mode()
def logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
           order: list[int] | None = None) -> torch.Tensor:
    """Stock-forward logits [B, T, V] of the variant running ``order`` (None: the base model)."""
    if order is None:
        order = base_order(len(block_list(model)))
    with reordered(model, order):
        out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    return out.logits


def kl_per_position(base_logits: torch.Tensor, var_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_base || p_variant) at each position, float64, written out term by term."""
    zb = base_logits.double()
    zv = var_logits.double()
    lp = zb - torch.logsumexp(zb, dim=-1, keepdim=True)
    lq = zv - torch.logsumexp(zv, dim=-1, keepdim=True)
    return (torch.exp(lp) * (lp - lq)).sum(-1)


def nll_per_position(var_logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """-log q(x_{t+1} | x_<=t) at positions 0..T-2 (float64, [B, T-1])."""
    z = var_logits[:, :-1].double()
    lq = z - torch.logsumexp(z, dim=-1, keepdim=True)
    return -lq.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


@dataclass
class SeqResult:
    kl_mean: torch.Tensor  # [B] per-sequence mean KL over valid positions
    kl_tokens: torch.Tensor  # [B] number of valid positions
    nll_sum: torch.Tensor  # [B] sum of next-token NLL where both t and t+1 are valid
    nll_tokens: torch.Tensor  # [B]

    @property
    def kl_grand(self) -> float:
        return float((self.kl_mean * self.kl_tokens).sum() / self.kl_tokens.sum())

    @property
    def nll_mean(self) -> torch.Tensor:
        return self.nll_sum / self.nll_tokens


def per_sequence(model, input_ids, attention_mask, order, base_logits=None) -> SeqResult:
    """Per-sequence KL means and NLL sums of the variant ``order``, valid positions only."""
    if base_logits is None:
        base_logits = logits(model, input_ids, attention_mask)
    vl = logits(model, input_ids, attention_mask, order)
    valid = attention_mask.bool()
    kl = kl_per_position(base_logits, vl)
    kl_tokens = valid.sum(1).double()
    kl_mean = torch.where(valid, kl, torch.zeros_like(kl)).sum(1) / kl_tokens
    pair_valid = valid[:, :-1] & valid[:, 1:]
    nll = nll_per_position(vl, input_ids)
    nll_sum = torch.where(pair_valid, nll, torch.zeros_like(nll)).sum(1)
    return SeqResult(kl_mean, kl_tokens, nll_sum, pair_valid.sum(1).double())


class Zeroed(torch.nn.Module):
    """A sublayer whose update is zero: it runs the original module and returns zeros in place of its output
    (the first item of a tuple output), the way a deleted attention or MLP sublayer adds nothing to the stream."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args, **kwargs):
        out = self.inner(*args, **kwargs)
        return (torch.zeros_like(out[0]), *out[1:]) if isinstance(out, tuple) else torch.zeros_like(out)
