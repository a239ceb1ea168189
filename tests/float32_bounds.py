"""Worst-case float32 error bounds for swapkl.model.kl, derived from the operations it performs.

The tolerance of a numeric test must hold on every CPU kernel path (AVX2, AVX-512, AMX, the scalar
``default`` path): matmul kernels differ in summation order and use of fused multiply-add, so a
tolerance read off one machine's result is not a tolerance. These bounds follow Higham's standard
model, ``fl(a op b) = (a op b)(1 + e)``, ``|e| <= u``, with ``u = 2**-24`` for float32 and
``gamma_n = n u / (1 - n u)`` for a sum or dot product of n terms in *any* order (so they hold for
every kernel, blocked, pairwise or FMA).

How ``swapkl.model.kl`` computes ``KL(p_b || p_v)`` for a token (see its module docstring):
``KL = pw . (h_b - h_v) + lse(z_v) - lse(z_b)`` where ``z = W h + b`` is formed in float32 and
``pw = W^T softmax(z_b)`` is formed in float32 and used in float64. Against the exact value:

1. Each logit ``z_v`` carries an error of at most ``gamma_{d+1} A_v`` with
   ``A_v = sum_k |W_vk h_k| + |b_v|`` (a d-term dot product plus the bias).
2. ``lse`` (max, subtract, exp, float32 sum, float64 log) then errs by at most
   ``max_v |dz_v|`` (lse is 1-Lipschitz in the max norm) plus the relative error of the sum:
   rounding of ``z - m`` (``u |z_v - m|``), of exp (``E u``, with ``E = 4`` ulp as a generous bound
   for the vectorised exp of every ATen path) and of the V-term sum (``gamma_V``).
3. ``pw`` errs because ``p`` does: each ``p_v`` has relative error at most ``2 max|dz| + (the lse
   rounding above)``, and the V-term product with ``W`` adds ``gamma_V``; this error is multiplied
   by ``|h_b - h_v|`` (so it vanishes for the base itself).

``kl_bound`` adds the three; ``nll_bound`` is (2) for the variant plus (1) for the label's logit.
The reference computes in float64 from the same float32 inputs, so its own error (~1e-15) is
negligible next to these.
"""

from __future__ import annotations

import torch

U32 = 2.0**-24
EXP_ULPS = 4.0


def gamma(n: int, u: float = U32) -> float:
    return n * u / (1 - n * u)


def _logit_error(w: torch.Tensor, b: torch.Tensor | None, h: torch.Tensor) -> torch.Tensor:
    """[N, V] bound on |fl(W h + b) - (W h + b)| for float32 logits."""
    w, h = w.double(), h.double()
    a = h.abs() @ w.abs().T
    if b is not None:
        a = a + b.double().abs()
    return gamma(w.shape[1] + 1) * a


def _lse_error(z: torch.Tensor, dz: torch.Tensor) -> torch.Tensor:
    """[N] bound on the error of swapkl's float32 logsumexp of logits z (exact) known to +-dz."""
    z = z.double()
    spread = (z.amax(-1, keepdim=True) - z).amax(-1) + 2 * dz.amax(-1)
    sum_rel = U32 * spread + EXP_ULPS * U32 + gamma(z.shape[-1])
    return dz.amax(-1) + 2 * sum_rel  # log(1 + e) <= 2 e for the tiny e here


def kl_bound(w, b, h_base, h_var) -> torch.Tensor:
    """[N] worst-case |KL_swapkl - KL_exact| for float32 final hidden states h_base, h_var [N, d]."""
    wd = w.double()
    zb = h_base.double() @ wd.T + (0 if b is None else b.double())
    zv = h_var.double() @ wd.T + (0 if b is None else b.double())
    dzb, dzv = _logit_error(w, b, h_base), _logit_error(w, b, h_var)
    lse_b, lse_v = _lse_error(zb, dzb), _lse_error(zv, dzv)
    p = torch.softmax(zb, -1)
    p_rel = 2 * dzb.amax(-1) + lse_b + gamma(w.shape[0])  # relative error of each p_v, then of p @ W
    pw_abs = p @ wd.abs()  # [N, d]: sum_v p_v |W_vk|
    pw_term = 1.01 * p_rel * (pw_abs * (h_base.double() - h_var.double()).abs()).sum(-1)
    return lse_b + lse_v + pw_term


def nll_bound(w, b, h_var, labels) -> torch.Tensor:
    """[N] worst-case |NLL_swapkl - NLL_exact| of the next token (labels >= 0)."""
    wd = w.double()
    zv = h_var.double() @ wd.T + (0 if b is None else b.double())
    dzv = _logit_error(w, b, h_var)
    return _lse_error(zv, dzv) + dzv.gather(1, labels.clamp(min=0)[:, None])[:, 0]


# ---------------------------------------------------------------------------------------- bf16-rounded logits
#
# With ``logits_dtype: bfloat16`` swapkl rounds its float32 logits ``fl(z)`` to bf16; a reference (the stock
# forward's bf16 ``lm_head``) rounds its own ``fl'(z)``. Both lie within ``dz`` (the float32 logit bound above)
# of the exact ``z``, so the two rounded logits can differ only where a bf16 rounding midpoint lies within ``dz``
# of ``z`` ("ambiguous" logits), and then by one bf16 spacing. Elsewhere they are the same bf16 value, exactly.
# To first order a change ``e_v`` of base logit v moves ``KL(p || q)`` by ``p_v (log p_v - log q_v - KL) e_v``
# and of variant logit v by ``(q_v - p_v) e_v``; the second-order rest is at most ``(sum |e_v|)^2`` (the
# Hessians of log-sum-exp and of ``p . z`` in the logits have entries below 1 in absolute row sum). On top of
# that, swapkl's float32 arithmetic on the (exact) rounded logits: the two log-sum-exps and the float32 sum
# ``sum_v p_v (z_b,v - z_v,v)`` whose ``p`` carries the relative error of a softmax.


def bf16_spacing(z: torch.Tensor) -> torch.Tensor:
    """The gap between consecutive bf16 values at ``|z|`` (8 significant bits)."""
    _, e = torch.frexp(z.double().abs().clamp(min=2.0**-126))
    return torch.ldexp(torch.ones_like(z, dtype=torch.float64), e - 8)


def ambiguous_bf16(z: torch.Tensor, dz: torch.Tensor) -> torch.Tensor:
    """Where the bf16 rounding of a value within ``dz`` of the exact ``z`` is not determined (bool)."""
    return (z - dz).to(torch.bfloat16) != (z + dz).to(torch.bfloat16)


def rounded_kl_bound(w, b, h_base, h_var, zb_ref, zv_ref) -> torch.Tensor:
    """[N] bound on |KL_swapkl - KL_ref| where KL_ref is the float64 KL of the reference's bf16 logits
    ``zb_ref``, ``zv_ref`` [N, V] and ``h_base``, ``h_var`` the final hidden states both logits come from."""
    wd = w.double()
    bias = 0 if b is None else b.double()
    zb, zv = h_base.double() @ wd.T + bias, h_var.double() @ wd.T + bias
    eb = ambiguous_bf16(zb, _logit_error(w, b, h_base)) * bf16_spacing(zb)
    ev = ambiguous_bf16(zv, _logit_error(w, b, h_var)) * bf16_spacing(zv)
    lp, lq = torch.log_softmax(zb_ref.double(), -1), torch.log_softmax(zv_ref.double(), -1)
    p, q = lp.exp(), lq.exp()
    kl = (p * (lp - lq)).sum(-1, keepdim=True)
    first = (eb * p * (lp - lq - kl).abs()).sum(-1) + (ev * (q - p).abs()).sum(-1)
    second = (eb.sum(-1) + ev.sum(-1)) ** 2
    zero = torch.zeros_like(zb)
    lse = _lse_error(zb_ref.double(), zero) + _lse_error(zv_ref.double(), zero)
    p_rel = 2 * _lse_error(zb_ref.double(), zero) + gamma(w.shape[0])
    pd = 1.01 * p_rel * (p * (zb_ref.double() - zv_ref.double()).abs()).sum(-1)
    return first + second + lse + pd


def rounded_nll_bound(w, b, h_var, zv_ref, labels) -> torch.Tensor:
    """[N] bound on |NLL_swapkl - NLL_ref| of the next token (labels >= 0), as :func:`rounded_kl_bound`."""
    wd = w.double()
    zv = h_var.double() @ wd.T + (0 if b is None else b.double())
    ev = ambiguous_bf16(zv, _logit_error(w, b, h_var)) * bf16_spacing(zv)
    q = torch.softmax(zv_ref.double(), -1)
    first = (ev * q).sum(-1) + ev.gather(1, labels[:, None])[:, 0]
    return first + ev.sum(-1) ** 2 + _lse_error(zv_ref.double(), torch.zeros_like(zv))


def stream_change_bounds(w, b, h_base, h_var, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """[N] bounds on how far KL and NLL move when each final-normed stream vector (rows of h_base, h_var [N, d])
    moves by at most ``eps`` of its 2-norm (two float32 runs of the same blocks that round differently).

    First order, with exact derivatives: for ``z = W h + b``, ``dKL/dz_var = q - p`` (1-norm <= 2),
    ``dKL/dz_base = (diag p - p p^T)(log p - log q)`` (1-norm <= the range of ``log p - log q`` over the
    vocabulary), ``NLL = lse(z_var) - z_label`` (moves by <= 2 |dz_var|_inf), and
    ``|dz|_inf <= max_v |W_v|_2 |dh|_2`` (Cauchy-Schwarz). A factor 2 covers the second order while
    ``|dz| << 1``.
    """
    wd = w.double()
    bias = 0 if b is None else b.double()
    lp = torch.log_softmax(h_base.double() @ wd.T + bias, -1)
    lq = torch.log_softmax(h_var.double() @ wd.T + bias, -1)
    spread = (lp - lq).amax(-1) - (lp - lq).amin(-1)
    row = wd.norm(dim=1).max()
    dz_b, dz_v = row * eps * h_base.double().norm(dim=1), row * eps * h_var.double().norm(dim=1)
    return 2 * (2 * dz_v + spread * dz_b), 2 * (2 * dz_v)
