"""Candidate explanations of the protocol gap, measured per pair (i < j) on one checkpoint's base pass.

Notation: ``h_s`` is the residual stream entering slot s in the base model (the engine's cached base
pass), ``B_b^s`` runs block b's weights at slot s (the slot only chooses the attention mask, as in the
probes), and ``f_b^s(h) = B_b^s(h) - h`` is the update block b adds to the stream. Every per-token
quantity is computed in float64 from the float32 (or model-dtype) streams and averaged with equal
weight over every valid (non-padding) token of every window -- a token-weighted mean, like ShortGPT's
BI in :mod:`swapkl.probes.residual_stream`. Norms are Euclidean over the hidden dimension.

Per block b (reported for both blocks of a pair as ``*_i`` and ``*_j``):

* ``rel_update`` -- the block's relative update size on its own input, ``||f_b^b(h_b)|| / ||h_b||``
  per token, i.e. ``||h_{b+1} - h_b|| / ||h_b||``.
* ``attn_entropy`` -- entropy in nats of the block's attention distribution over keys on its own input,
  ``-sum_k p_k log p_k`` (``0 log 0 = 0``), averaged over the query heads (after key/value heads are
  shared out), then over valid query tokens. The probabilities are the stock attention's
  ``softmax`` output (the eager implementation, which returns them), captured by a forward hook on
  the block's attention module during the base pass; every supported architecture returns them.

Per pair i < j:

* ``update_cos`` -- cosine between the two blocks' updates on the *same* input, the stream entering
  the earlier slot: ``cos(f_i^i(h_i), f_j^i(h_i))`` (block j at slot i is the first block the
  replacement ``M_{i<-j}`` runs).
* ``commutator`` -- how much the order of the two blocks matters on the same input:
  ``||A - B|| / ||A||`` with ``A = B_j^{i+1}(B_i^i(h_i))`` (i then j) and
  ``B = B_i^{i+1}(B_j^i(h_i))`` (j then i), both run at slots i, i+1.
* ``weight_dist`` -- relative Frobenius distance of the blocks' weights,
  ``||theta_i - theta_j|| / ((||theta_i|| + ||theta_j||) / 2)``, where theta is every parameter tensor
  of the block (matched by name; norms over all of them together, in float64). It lies in [0, 2]; it is
  NaN if the two blocks' parameter names or shapes differ. It depends on the weights only, not on data.
* pair summaries used by the analysis (:mod:`swapkl.studies.covariate_stats`): ``rel_update_mean``
  (the mean of ``rel_update_i`` and ``rel_update_j``), ``rel_update_absdiff`` (their absolute
  difference), ``attn_entropy_mean`` and ``attn_entropy_absdiff`` likewise.

A per-checkpoint file (:data:`COVARIATE_FILE_SCHEMA`) holds one row per pair of the probed pair set.
"""

from __future__ import annotations

import contextlib
import logging

import pyarrow as pa
import torch

from swapkl.errors import SwapKLError
from swapkl.probes.pairs import pairs_for, parse_pair_set
from swapkl.tables.schemas import COVARIATE_FILE_SCHEMA
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.data.windows import check_spec, check_windows, load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.options import require_device, require_int
from swapkl.hub.revision_names import step_of
from swapkl.progress import track

log = logging.getLogger(__name__)

#: per-token covariates summed over tokens (the token-weighted means of the docstring)
PAIR_TOKEN_COVARIATES = ("update_cos", "commutator")
BLOCK_TOKEN_COVARIATES = ("rel_update", "attn_entropy")


def _norm(x: torch.Tensor) -> torch.Tensor:
    return x.double().norm(dim=-1)


def _diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a - b`` in float64 (an update is a small difference of large streams: no float32 cancellation)."""
    return a.double() - b.double()


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1, eps=0.0)


@torch.no_grad()
def weight_distance(block_a: torch.nn.Module, block_b: torch.nn.Module) -> float:
    """``||theta_a - theta_b|| / ((||theta_a|| + ||theta_b||) / 2)`` over all parameters (float64)."""
    pa_, pb = dict(block_a.named_parameters()), dict(block_b.named_parameters())
    if pa_.keys() != pb.keys() or any(pa_[k].shape != pb[k].shape for k in pa_):
        return float("nan")
    diff = sum(float((pa_[k].double() - pb[k].double()).square().sum()) for k in pa_)
    na = sum(float(p.double().square().sum()) for p in pa_.values())
    nb = sum(float(p.double().square().sum()) for p in pb.values())
    den = (na**0.5 + nb**0.5) / 2.0
    return diff**0.5 / den if den > 0 else float("nan")


@contextlib.contextmanager
def eager_attention(model):
    """Run ``model`` with transformers' eager attention (the one that returns probabilities), restored after."""
    before = model.config._attn_implementation
    if before != "eager":
        model.set_attn_implementation("eager")
    try:
        yield
    finally:
        if before != "eager":
            model.set_attn_implementation(before)


@contextlib.contextmanager
def _capture_attention(adapter, store: dict[int, torch.Tensor]):
    """Forward hooks that keep each block's attention probabilities ``[B, heads, T, T]`` by block index."""
    hooks = []
    for b in range(adapter.n_layers):
        module = getattr(adapter.blocks[b], adapter.layout.attention)

        def hook(_m, _args, out, b=b):
            probs = out[1] if isinstance(out, tuple) and len(out) > 1 else None
            if probs is None:
                raise SwapKLError(f"block {b}'s attention returned no probabilities: attention entropy needs "
                                  "transformers' eager attention")
            store[b] = probs

        hooks.append(module.register_forward_hook(hook))
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def _entropy(probs: torch.Tensor) -> torch.Tensor:
    """[B, T] entropy (nats) over keys, averaged over heads, of probabilities ``[B, H, T, T]``."""
    p = probs.double()
    return -torch.special.xlogy(p, p).sum(-1).mean(1)


@torch.inference_mode()
def batch_sums(engine, input_ids: torch.Tensor, attention_mask: torch.Tensor, pairs) -> dict:
    """Sums over this batch's valid tokens of every per-token covariate, and the token count.

    ``{("rel_update", b), ("attn_entropy", b), ("update_cos", i, j), ("commutator", i, j): float}`` and
    ``"tokens"``. The model must run eager attention (:func:`eager_attention`).
    """
    a = engine.adapter
    probs: dict[int, torch.Tensor] = {}
    with _capture_attention(a, probs):
        state = engine.base_pass(input_ids, attention_mask, targets=False)
    h, ctx, valid = state.residuals, state.ctx, state.valid
    out = {"tokens": float(valid.sum())}

    def total(x: torch.Tensor) -> float:
        return float(x[valid].sum())

    for b in range(engine.n_layers):
        out[("rel_update", b)] = total(_norm(_diff(h[b + 1], h[b])) / _norm(h[b]))
        out[("attn_entropy", b)] = total(_entropy(probs.pop(b)))
    for i, j in pairs:
        moved = a.run_block(j, i, h[i], ctx)  # B_j^i(h_i)
        out[("update_cos", i, j)] = total(_cos(_diff(h[i + 1], h[i]), _diff(moved, h[i])))
        i_then_j = a.run_block(j, i + 1, h[i + 1], ctx)
        j_then_i = a.run_block(i, i + 1, moved, ctx)
        out[("commutator", i, j)] = total(_norm(_diff(i_then_j, j_then_i)) / _norm(i_then_j))
    engine.layer_evals += 3 * len(pairs)
    return out


def measure(engine, input_ids: torch.Tensor, attention_mask: torch.Tensor, pairs, *, batch_size: int = 8,
            label: str = "covariates") -> list[dict]:
    """One dict per pair (layer_i, layer_j, distance, every column of :data:`swapkl.tables.schemas.COVARIATE_COLUMNS`,
    n_seqs, n_tokens): the covariates of the docstring over all windows."""
    pairs = [(int(i), int(j)) for i, j in pairs]
    n = engine.n_layers
    bad = [p for p in pairs if not 0 <= p[0] < p[1] < n]
    if bad:
        raise SwapKLError(f"pair {bad[0]} is not i < j within the model's {n} blocks")
    totals: dict = {}
    device = next(engine.model.parameters()).device
    starts = range(0, input_ids.shape[0], batch_size)
    with eager_attention(engine.model):
        for lo in track(starts, label, "batch"):
            sums = batch_sums(engine, input_ids[lo:lo + batch_size].to(device),
                              attention_mask[lo:lo + batch_size].to(device), pairs)
            for k, v in sums.items():
                totals[k] = totals.get(k, 0.0) + v
    tokens = totals["tokens"]
    if tokens <= 0:
        raise SwapKLError("the windows hold no valid token: nothing to average the covariates over")
    mean = {k: v / tokens for k, v in totals.items() if k != "tokens"}
    blocks = engine.adapter.blocks
    rows = []
    for i, j in pairs:
        row = {"layer_i": i, "layer_j": j, "distance": j - i}
        for name in BLOCK_TOKEN_COVARIATES:
            vi, vj = mean[(name, i)], mean[(name, j)]
            row.update({f"{name}_i": vi, f"{name}_j": vj, f"{name}_mean": (vi + vj) / 2.0,
                        f"{name}_absdiff": abs(vi - vj)})
        for name in PAIR_TOKEN_COVARIATES:
            row[name] = mean[(name, i, j)]
        row["weight_dist"] = weight_distance(blocks[i], blocks[j])
        row.update(n_seqs=int(input_ids.shape[0]), n_tokens=int(tokens))
        rows.append(row)
    return rows


def run_covariates(model: str, out: str, *, revision: str | None = None, pairs: str = "adjacent", data,
                   dtype: str = "float32", device: str = "auto", batch_size: int = 8,
                   metadata: dict | None = None, allow_pickle: bool = False, trust_remote_code: bool = False) -> None:
    """Measure the covariates of every pair of ``pairs`` on one checkpoint's windows and write ``out``."""
    check_covariate_options(pairs, batch_size)
    require_device(device)
    check_spec(data)
    check_writable(out)
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, need_tokenizer=data.tokens is None)
    table, prov = covariate_table(loaded, load_windows(data, loaded.tokenizer), pairs=pairs, data=data,
                                  batch_size=batch_size, metadata=metadata)
    write_parquet(table, out, prov)
    log.info("wrote %s (%d pairs)", out, table.num_rows)


def check_covariate_options(pairs: str, batch_size: int) -> None:
    """The options of a covariate measurement that can be checked before a model is loaded."""
    parse_pair_set(pairs)
    require_int("batch_size", batch_size, 1)


def covariate_table(loaded, windows, *, pairs: str, data, batch_size: int = 8,
                    metadata: dict | None = None) -> tuple[pa.Table, dict]:
    """The covariates of every pair of ``pairs`` on a loaded checkpoint (as :func:`swapkl.model.loading.load_model`
    loads it by default) and its ``windows`` of ``data``: the table and provenance that :func:`run_covariates`
    writes. The probe job of a checkpoint measures them on its own load (:func:`swapkl.probes.probe.run_probe`)."""
    metadata = dict(metadata or {})
    engine = ProbeEngine(loaded.model)
    check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    pair_list = pairs_for(pairs, engine.n_layers)
    if not pair_list:
        raise SwapKLError(f"{label} has {engine.n_layers} block(s): pair set {pairs} holds no pair")
    rows = measure(engine, torch.from_numpy(windows.input_ids), torch.from_numpy(windows.attention_mask),
                   pair_list, batch_size=batch_size, label=f"covariates {label}@{rev}")
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=engine.n_layers)
    table = pa.Table.from_pylist([meta | r for r in rows], schema=COVARIATE_FILE_SCHEMA)
    prov = provenance.build(loaded, windows, pairs=pairs, batch_size=batch_size, data_spec=data.as_dict(),
                            model=label, revision_label=rev, attention="eager", **metadata)
    log.info("measured the covariates of %d pairs on %d windows", len(rows), len(windows.input_ids))
    return table, prov
