"""The one definition of KL(p_base || p_variant) and next-token NLL used everywhere.

Logits are always formed in float32 from the final-normed hidden state (whatever the
model dtype), and the vocabulary is processed in token chunks so ``[tokens x vocab]``
never exists in float32 for all tokens at once.

``logits_dtype: bfloat16`` (a paper setting, docs/paper_modes.md) then rounds those float32
logits to bfloat16 before the softmax, as the published study's JAX forwards did (a bf16 x bf16
product accumulated in float32 and returned in bf16, then ``log_softmax`` of it cast to float32).
The rounded logits are no longer linear in ``h``, so the summaries below do not apply: the base
keeps its final hidden state instead and every variant recomputes the base's rounded logits
(:func:`kl_and_nll`: ``KL = sum_v p_v (z_b,v - z_v,v) + lse(z_v) - lse(z_b)``).

For each token of the base model we keep three small quantities instead of its
distribution ``p``:

* ``negent = sum_v p_v log p_v`` (float64, computed as ``pw . h + pb - logsumexp(z)``),
* ``pw = W^T p`` (the p-weighted unembedding rows, a d-vector, float64),
* ``pb = p . b`` when the head has a bias.

For a variant with final hidden state ``h`` and logits ``z = W h + b``:
``KL = negent - (pw . h + pb) + logsumexp(z)``, since ``sum_v p_v z_v = pw . h + pb``.
So every variant costs one unembedding and one logsumexp per token, and nothing of
vocabulary size is stored between variants.

Which positions count and how they are averaged: :class:`swapkl.model.kl_options.KLOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from swapkl.errors import SwapKLError


def last_positions(valid: torch.Tensor) -> torch.Tensor:
    """``[B, T]`` bool: the last valid position of each row of ``valid`` (none in a row without one)."""
    return valid & (valid.long().cumsum(1) == valid.long().sum(1, keepdim=True))


#: ``logits_dtype`` values: the dtype the float32 logits are rounded to before the softmax (None: not rounded)
LOGITS_DTYPES = {"float32": None, "bfloat16": torch.bfloat16}


def logits_rounding(logits_dtype: str) -> torch.dtype | None:
    """The dtype that ``logits_dtype`` rounds the logits to (None for the clean ``float32``)."""
    if logits_dtype not in LOGITS_DTYPES:
        raise SwapKLError(f"logits_dtype must be one of {', '.join(LOGITS_DTYPES)}, got {logits_dtype!r}")
    return LOGITS_DTYPES[logits_dtype]


@dataclass
class Unembedding:
    """A float32 view of the LM head (a copy only when the model itself is low precision); ``round_to``: the
    dtype its float32 logits are rounded to (None: kept in float32, the clean definition)."""

    weight: torch.Tensor
    bias: torch.Tensor | None
    round_to: torch.dtype | None = None

    @classmethod
    def from_head(cls, head: torch.nn.Linear, logits_dtype: str = "float32") -> "Unembedding":
        """The head's weights; a head that accelerate offloaded (weights on the meta device) is read in once and
        kept as a float32 copy on its execution device."""
        round_to = logits_rounding(logits_dtype)
        if head.weight.device.type == "meta":
            from accelerate.utils import align_module_device

            with align_module_device(head):
                bias = None if head.bias is None else head.bias.detach().float().clone()
                return cls(head.weight.detach().float().clone(), bias, round_to)
        bias = None if head.bias is None else head.bias.detach().float()
        return cls(head.weight.detach().float(), bias, round_to)

    @property
    def device(self) -> torch.device:
        return self.weight.device

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """float32 logits ``W h + b`` (rounded to ``round_to`` and back to float32 where set)."""
        z = F.linear(h.float(), self.weight, self.bias)
        return z if self.round_to is None else z.to(self.round_to).float()


@dataclass
class BaseTargets:
    """Per-token summaries of the base distribution (see module docstring)."""

    negent: torch.Tensor  # [N] float64
    pw: torch.Tensor | None  # [N, d] float64 (None with rounded logits)
    pb: torch.Tensor | None  # [N] float64
    labels: torch.Tensor  # [N] long, next token id or -1 where there is none
    h: torch.Tensor | None = None  # [N, d] the final-normed base hidden states, kept only with rounded logits


def _chunks(n: int, size: int):
    for start in range(0, n, size):
        yield start, min(n, start + size)


def base_targets(unemb: Unembedding, h: torch.Tensor, labels: torch.Tensor, chunk: int) -> BaseTargets:
    """Summaries of ``p_base`` for final-normed hidden states ``h`` [N, d]."""
    n = h.shape[0]
    if unemb.round_to is not None:  # rounded logits: keep h, the variants recompute the base logits
        negent = torch.empty(n, dtype=torch.float64, device=h.device)
        for a, b in _chunks(n, chunk):
            z = unemb.logits(h[a:b])
            pz = (torch.softmax(z, dim=-1) * z).sum(-1).double()
            negent[a:b] = pz - _logsumexp_(z)
        return BaseTargets(negent, None, None, labels, h)
    negent = torch.empty(n, dtype=torch.float64, device=h.device)
    pw = torch.empty(n, h.shape[1], dtype=torch.float64, device=h.device)
    pb = None if unemb.bias is None else torch.empty(n, dtype=torch.float64, device=h.device)
    for a, b in _chunks(n, chunk):
        # one [chunk x vocab] buffer: the logits become exp(z - max), then p, in place
        e, total, lse = _shifted_exp_(unemb.logits(h[a:b]))
        p = e.div_(total)
        pw[a:b] = (p @ unemb.weight).double()
        pz = (pw[a:b] * h[a:b].double()).sum(-1)
        if pb is not None:
            pb[a:b] = (p @ unemb.bias).double()
            pz = pz + pb[a:b]
        del e, p  # freed before the next chunk's logits exist
        # sum p log p = sum p z - logsumexp(z), formed from the same pw (and pb) the variants use, so
        # that in KL = negent - pw.h_variant + lse the float32 rounding of p cancels to first order:
        # KL = pw.(h_base - h_variant) + lse_variant - lse_base
        negent[a:b] = pz - lse
    return BaseTargets(negent, pw, pb, labels)


def kl_and_nll(unemb: Unembedding, h: torch.Tensor, base: BaseTargets, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token KL(p_base || p_variant) and variant NLL of the next token, both float64 [N].

    NLL is NaN where the token has no next token (label -1). Non-finite logits give a
    non-finite KL; callers check.
    """
    if (base.h is not None) != (unemb.round_to is not None):
        raise SwapKLError("the base summaries and the unembedding disagree on rounding the logits")
    if base.h is not None:
        return _kl_and_nll_rounded(unemb, h, base, chunk)
    n = h.shape[0]
    kl = torch.empty(n, dtype=torch.float64, device=h.device)
    nll = torch.full((n,), float("nan"), dtype=torch.float64, device=h.device)
    for a, b in _chunks(n, chunk):
        hc = h[a:b].float()
        z = F.linear(hc, unemb.weight, unemb.bias)
        lab = base.labels[a:b]
        has = lab >= 0
        zl = z.gather(1, lab.clamp(min=0).unsqueeze(1)).squeeze(1).double() if has.any() else None
        lse = _logsumexp_(z)  # z is overwritten from here on
        pz = (base.pw[a:b] * hc.double()).sum(-1)
        if base.pb is not None:
            pz = pz + base.pb[a:b]
        kl[a:b] = base.negent[a:b] - pz + lse
        if zl is not None:
            nll[a:b] = torch.where(has, lse - zl, nll[a:b])
        del z  # freed before the next chunk's logits exist
    return kl, nll


def _kl_and_nll_rounded(unemb: Unembedding, h: torch.Tensor, base: BaseTargets, chunk: int):
    """:func:`kl_and_nll` for rounded logits: the base's rounded logits recomputed from its hidden states.

    ``KL = sum_v p_v (z_b,v - z_v,v) + lse(z_v) - lse(z_b)`` with the logsumexps of :func:`_logsumexp_`: the
    same float32 rounding of the sums as the clean form, whose ``pw . (h_b - h_v)`` this first term replaces.
    Four ``[tokens x vocab]`` float32 buffers per chunk, so chunks are half the size of the clean form's.
    """
    n = h.shape[0]
    kl = torch.empty(n, dtype=torch.float64, device=h.device)
    nll = torch.full((n,), float("nan"), dtype=torch.float64, device=h.device)
    for a, b in _chunks(n, max(1, chunk // 2)):
        zv = unemb.logits(h[a:b])
        zb = unemb.logits(base.h[a:b])
        lab = base.labels[a:b]
        has = lab >= 0
        zl = zv.gather(1, lab.clamp(min=0).unsqueeze(1)).squeeze(1).double() if has.any() else None
        gap = zb - zv
        pd = torch.softmax(zb, dim=-1).mul_(gap).sum(-1).double()
        del gap
        lse = _logsumexp_(zv)  # zv and zb are overwritten from here on
        kl[a:b] = pd + lse - _logsumexp_(zb)
        if zl is not None:
            nll[a:b] = torch.where(has, lse - zl, nll[a:b])
    return kl, nll


def _logsumexp_(z: torch.Tensor) -> torch.Tensor:
    """Row-wise logsumexp of float32 logits, returned in float64; overwrites ``z``.

    The arithmetic of ``torch.logsumexp`` (max, exp of the shifted values, float32 sum) but in
    place, without its ``[tokens x vocab]`` temporaries (fewer passes over memory: about 2.5x
    faster on CPU at 1024 x 8192, and no extra chunk-sized buffers), and with the final log
    and add of the max in float64, so the result (about log V, ~10 nats) is not rounded to
    float32 (~5e-7). Non-finite logits give a non-finite result, which callers reject.
    """
    return _shifted_exp_(z)[2]


def _shifted_exp_(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``z`` overwritten with ``exp(z - max)`` (float32), its row sums [N, 1] (float32) and the row-wise
    logsumexp of the original ``z`` (float64 [N]): the arithmetic of :func:`_logsumexp_`."""
    m = z.amax(dim=-1, keepdim=True)
    e = z.sub_(m).exp_()
    total = e.sum(-1, keepdim=True)
    return e, total, total.squeeze(-1).double().log_().add_(m.squeeze(-1).double())


def kl_from_logits(base_logits: torch.Tensor, variant_logits: torch.Tensor) -> torch.Tensor:
    """Direct per-token KL(p_base || p_variant) from two logit tensors [..., V] (float64).

    The textbook form, used for pruned-model KL on small batches and as documentation
    of what :func:`kl_and_nll` computes.
    """
    lp = torch.log_softmax(base_logits.double(), dim=-1)
    lq = torch.log_softmax(variant_logits.double(), dim=-1)
    return (lp.exp() * (lp - lq)).sum(-1)


def next_token_hits(unemb: Unembedding, h: torch.Tensor, labels: torch.Tensor, chunk: int) -> torch.Tensor:
    """Whether the greedy prediction (first argmax of the float32 logits) is the next token, bool [N].

    False where there is no next token (label -1). The accuracy of language-modelling data.
    """
    out = torch.zeros(h.shape[0], dtype=torch.bool, device=h.device)
    for a, b in _chunks(h.shape[0], chunk):
        out[a:b] = unemb.logits(h[a:b]).argmax(-1) == labels[a:b]
    return out


def next_token_nll(unemb: Unembedding, h: torch.Tensor, labels: torch.Tensor, chunk: int) -> torch.Tensor:
    """-log q(label) for final-normed hidden states ``h`` [N, d] whose labels all exist (float64 [N]).

    The same arithmetic as the NLL of :func:`kl_and_nll` (float32 logits, the label's logit and the
    log-sum-exp in float64) without the KL terms, for callers that need only likelihoods.
    """
    out = torch.empty(h.shape[0], dtype=torch.float64, device=h.device)
    for a, b in _chunks(h.shape[0], chunk):
        z = unemb.logits(h[a:b])
        zl = z.gather(1, labels[a:b].unsqueeze(1)).squeeze(1).double()
        out[a:b] = _logsumexp_(z) - zl
        del z  # freed before the next chunk's logits exist
    return out
