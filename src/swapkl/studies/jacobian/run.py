"""Spectral norms of the residual blocks' Jacobians, ``results/jacobian.parquet``.

Block k maps the residual stream x entering it (one whole sequence, ``[T, d]`` flattened: causal attention
couples the positions) to ``x + g_k(x)``; ``J_k = dg_k/dx`` at the base model's stream. Two estimators:

* ``exact`` (default): power iteration on ``J_k^T J_k`` with exact Jacobian-vector and vector-Jacobian
  products (``torch.func.jvp`` / ``torch.func.vjp``); converges to the largest singular value ``||J_k||_2``.
* ``finite_difference``: the paper's procedure -- ``v <- J_k v / ||J_k v||`` with
  ``J_k v ~ (g_k(x + eps v) - g_k(x)) / eps``, reporting ``||J_k v||`` after the last iteration (20
  iterations, eps = 1e-3, 10 prompts in the paper). Iterating ``J_k`` itself (not ``J_k^T J_k``) tracks
  the largest eigenvalue modulus, which can lie below the largest singular value.

One row per (block, prompt) is summarised to one row per block: norm_mean, norm_max, norm_min over the
prompts, with model, revision, method, iterations, eps, n_prompts, seq_len.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from swapkl.tables import provenance
from swapkl.probes.covariates import eager_attention
from swapkl.data.windows import Windows, check_windows, load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.progress import track
from swapkl.studies.jacobian.jobs import METHODS, JacobianJob



def residual_update(engine: ProbeEngine, block: int, ctx):
    """``g(x) = block(x) - x`` for one sequence's stream ``x`` of shape ``[1, T, d]``, at the block's own slot."""
    return lambda x: engine.adapter.run_block(block, block, x, ctx) - x


def _unit(shape, generator, dtype, device) -> torch.Tensor:
    v = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype=dtype, device=device)
    return v / v.norm()


def exact_products(g, x: torch.Tensor):
    """``(v -> J v, u -> J^T u)`` at ``x``: torch.func's forward- and reverse-mode products, or, for modules
    with custom autograd Functions that torch.func cannot transform (BLOOM's GeLU), torch.autograd's
    (J v by double backward), equally exact."""
    try:
        _, pullback = torch.func.vjp(g, x)
        return (lambda v: torch.func.jvp(g, (x,), (v,))[1]), (lambda u: pullback(u)[0])
    except RuntimeError as e:
        if "setup_context" not in str(e):
            raise
    return (lambda v: torch.autograd.functional.jvp(g, x, v)[1]), (lambda u: torch.autograd.functional.vjp(g, x, u)[1])


def norm_exact(g, x: torch.Tensor, iterations: int, generator: torch.Generator) -> float:
    """||J||_2 of ``g`` at ``x`` by power iteration on J^T J (exact products)."""
    v = _unit(x.shape, generator, x.dtype, x.device)
    jvp, vjp = exact_products(g, x)
    sigma = 0.0
    for _ in range(iterations):
        jv = jvp(v).detach()
        sigma = float(jv.norm())
        if sigma == 0.0:
            return 0.0
        w = vjp(jv).detach()
        v = w / w.norm()
    return sigma


def norm_finite_difference(g, x: torch.Tensor, iterations: int, eps: float, generator: torch.Generator) -> float:
    """The paper's estimate: power iteration on J itself with finite-difference products."""
    v = _unit(x.shape, generator, x.dtype, x.device)
    gx = g(x)
    sigma = 0.0
    for _ in range(iterations):
        jv = (g(x + eps * v) - gx) / eps
        sigma = float(jv.norm())
        if sigma == 0.0:
            return 0.0
        v = jv / jv.norm()
    return sigma


def block_norms(engine: ProbeEngine, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, method: str,
                iterations: int, eps: float, seed: int) -> np.ndarray:
    """``[n_layers]`` norm estimates for one sequence (``input_ids`` of shape ``[1, T]``)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        h, ctx = engine.adapter.prepare(input_ids, attention_mask)
        streams = [h]
        for slot in range(engine.n_layers - 1):
            streams.append(engine.adapter.run_block(slot, slot, streams[-1], ctx))
    out = np.empty(engine.n_layers)
    for k, x in enumerate(streams):
        g = residual_update(engine, k, ctx)
        if method == "exact":
            out[k] = norm_exact(g, x.detach(), iterations, generator)
        else:
            with torch.no_grad():
                out[k] = norm_finite_difference(g, x, iterations, eps, generator)
    return out


def summarise(norms: np.ndarray, **meta) -> pd.DataFrame:
    """One row per block from ``[prompts, blocks]`` estimates."""
    return pd.DataFrame({**meta, "block": np.arange(norms.shape[1]), "norm_mean": norms.mean(0),
                         "norm_max": norms.max(0), "norm_min": norms.min(0), "n_prompts": norms.shape[0]})


def jacobian_table(engine: ProbeEngine, windows: Windows, *, method: str = "exact", iterations: int = 20,
                   eps: float = 1e-3, n_prompts: int = 10, seed: int = 0, device="cpu",
                   desc: str = "jacobian") -> np.ndarray:
    """``[prompts, blocks]`` norm estimates of the model on ``engine`` over the first ``n_prompts`` of
    ``windows`` (in memory: nothing is read or written)."""
    rows = []
    n = min(n_prompts, windows.input_ids.shape[0])
    with eager_attention(engine.model):  # forward-mode AD needs the plain attention kernels
        for p in track(range(n), desc, "prompt"):
            ids = torch.from_numpy(windows.input_ids[p:p + 1]).to(device)
            mask = torch.from_numpy(windows.attention_mask[p:p + 1]).to(device)
            rows.append(block_norms(engine, ids, mask, method=method, iterations=iterations, eps=eps, seed=seed + p))
    return np.stack(rows)


def run_jacobian(job: JacobianJob) -> pd.DataFrame:
    """Estimate every block's ||J_k||_2 on the first ``n_prompts`` windows of a
    :class:`~swapkl.studies.jacobian.jobs.JacobianJob` (``run_jacobian(job)``) and write its ``out``."""
    job = JacobianJob.checked(job)
    method, iterations, eps, n_prompts, seed, data = (job.method, job.iterations, job.eps, job.n_prompts, job.seed,
                                                      job.data)
    if method not in METHODS:
        raise SwapKLError(f"jacobian method must be one of {', '.join(METHODS)}, not {method!r}")
    if iterations < 1 or n_prompts < 1 or not eps > 0:
        raise SwapKLError(f"jacobian: iterations ({iterations}) and n_prompts ({n_prompts}) must be >= 1 and "
                          f"eps ({eps}) > 0")
    check_writable(job.out)
    metadata = dict(job.metadata or {})
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, need_tokenizer=data.tokens is None,
                        **(job.placement or {}))
    engine = ProbeEngine(loaded.model)
    windows = load_windows(data, loaded.tokenizer)
    check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
    norms = jacobian_table(engine, windows, method=method, iterations=iterations, eps=eps, n_prompts=n_prompts,
                           seed=seed, device=loaded.device, desc=f"jacobian {metadata.get('model', job.model)}")
    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    df = summarise(norms, model=label, revision=rev, method=method, iterations=iterations,
                   eps=eps if method == "finite_difference" else np.nan, seq_len=int(windows.input_ids.shape[1]))
    write_parquet(df, job.out, provenance.build(loaded, windows, method=method, iterations=iterations, eps=eps,
                                                n_prompts=norms.shape[0], seed=seed, model=label, revision_label=rev,
                                                **metadata))
    return df
