"""The sublayer decomposition measured on a checkpoint: the engine in memory (a model and windows in, per-window
KL sums out, :func:`window_sums`), then :func:`swapkl.studies.sublayers.stats.decomposition`, written with its
provenance by :func:`run_sublayers`; with budgets, the removal sets of :mod:`swapkl.studies.sublayers.stats`
chosen from the same sums and their perplexity on the evaluation text (:func:`pruning_costs`)."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa

from swapkl.data.windows import check_spec, check_windows, load_windows
from swapkl.hub.revision_names import step_of
from swapkl.model.batch_loop import in_window_order, sweep, window_batches
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.model.sublayer_variants import sublayers_removed
from swapkl.model.sublayers import sublayer_parameters
from swapkl.errors import SwapKLError
from swapkl.options import require_device, require_int
from swapkl.probes.pair_sets import parse_pair_set
from swapkl.pruning.inputs import check_disjoint
from swapkl.pruning.perplexity import load_eval_windows, window_nll
from swapkl.studies.sublayers import stats
from swapkl.studies.sublayers.stats import GAPS_SCHEMA, decomposition, sublayer_variants
from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.tables import provenance
from swapkl.tables.file_checks import require_distinct
from swapkl.tables.parquet_io import check_writable, write_parquets

log = logging.getLogger(__name__)


def window_sums(engine, input_ids: np.ndarray, attention_mask: np.ndarray, variants, *, batch_size: int = 8,
                device="cpu", desc: str | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """({variant key: per-window KL sum}, per-window scored tokens), in the windows' order."""
    batches = window_batches(input_ids, attention_mask, batch_size)
    per_batch: dict[str, list] = {v.key: [None] * len(batches) for v in variants}
    tokens: list = [None] * len(batches)
    for m in sweep(engine, batches, variants, device=device, desc=desc):
        stats = engine.seq_stats(m.state, m.kl, m.nll)
        if m.k is None:
            tokens[m.index] = stats.tokens.cpu().numpy()
        else:
            per_batch[m.variant.key][m.index] = stats.kl_sum.cpu().numpy()
    return ({key: in_window_order(values, batches) for key, values in per_batch.items()},
            in_window_order(tokens, batches))


def part_parameters(engine) -> dict[str, int]:
    """The parameters of each part of block 0 (every block of a model has the same)."""
    block = engine.adapter.blocks[0]
    sizes = dict(block.named_parameters())
    out = {part: sum(sizes[n].numel() for n in sublayer_parameters(block, engine.adapter, part))
           for part in ("attention", "mlp")}
    return out | {"block": sum(p.numel() for p in block.parameters())}


def pruning_costs(engine, eval_windows, sets: dict, *, params: dict[str, int], n_boot: int, seed: int,
                  batch_size: int = 8, device="cpu") -> list[dict]:
    """The perplexity of every feasible set of ``sets`` (:func:`swapkl.studies.sublayers.stats.removal_sets`) on
    ``eval_windows`` and :func:`~swapkl.studies.sublayers.stats.cost_rows`' rows."""
    keys = [key for key, chosen in sets.items() if chosen is not None]
    variants = [sublayers_removed(sets[k]["blocks"], sets[k]["skipped"], engine.n_layers) for k in keys]
    base, tokens, nll = window_nll(engine, eval_windows, variants, batch_size=batch_size, device=device)
    return stats.cost_rows(sets, base, dict(zip(keys, nll)), tokens, params=params, n_boot=n_boot, seed=seed)


def _check(job) -> None:
    check_spec(job.data)
    parse_pair_set(job.pairs)
    require_int("batch_size", job.batch_size, 1)
    require_int("n_boot", job.n_boot, 1)
    require_int("seed", job.seed, 0)
    require_int("spacing", job.spacing, 0)
    require_device(job.device)
    outs = {"out": job.out} | ({"pruning_out": job.pruning_out} if job.pruning_out else {})
    if job.budgets and (job.eval_data is None or job.pruning_out is None):
        raise SwapKLError("sublayer pruning budgets need the evaluation text (eval_data) and pruning_out")
    if job.budgets:
        job.eval_data.check()
        check_disjoint(job.eval_data, job.data, "probe")  # the guides' scores are not fitted to the cost's text
    require_distinct(outs)
    for out in outs.values():
        check_writable(out)


def run_sublayers(job: SublayerJob) -> list[dict]:
    """Load the checkpoint and the windows of a :class:`~swapkl.studies.sublayers.jobs.SublayerJob`, measure
    every variant of :func:`sublayer_variants`, and write :func:`decomposition`'s table to ``job.out`` with its
    provenance (and, with ``job.budgets``, the pruning table to ``job.pruning_out``); returns the decomposition's
    rows."""
    job = SublayerJob.checked(job)
    _check(job)
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code,
                        need_tokenizer=job.data.tokens is None or bool(job.budgets),
                        **(job.placement or {}))
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens)
    windows = load_windows(job.data, loaded.tokenizer)
    check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
    if windows.shortfall():
        log.warning(windows.shortfall())
    params = part_parameters(engine)
    budgets = stats.check_budgets(list(job.budgets), engine.n_layers)
    eval_windows = load_eval_windows(job.eval_data, loaded.tokenizer, engine.adapter.max_positions) if budgets else None
    label = (job.metadata or {}).get("model") or loaded.model_id
    rev = (job.metadata or {}).get("revision") or loaded.revision or "main"
    variants = sublayer_variants(job.pairs, engine.n_layers)
    sums, tokens = window_sums(engine, windows.input_ids, windows.attention_mask, variants,
                               batch_size=job.batch_size, device=loaded.device,
                               desc=f"sublayer probes {label}@{rev}")
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=engine.n_layers)
    rows = [meta | r for r in decomposition(sums, tokens, job.pairs, engine.n_layers, params=params,
                                             n_boot=job.n_boot, seed=job.seed)]
    prov = provenance.build(loaded, windows, pairs=job.pairs, batch_size=job.batch_size,
                            data_spec=job.data.as_dict(), model=label, revision_label=rev,
                            sublayers={"n_boot": job.n_boot, "seed": job.seed, "variants": len(variants)})
    written = [(pa.Table.from_pylist(rows, schema=GAPS_SCHEMA), job.out, prov)]
    if job.pruning_out and not budgets:  # the rule's file, empty where the config asks for no pruning
        written.append((stats.PRUNING_SCHEMA.empty_table(), job.pruning_out, prov | {"budgets": []}))
    if budgets:
        sets = stats.removal_sets(sums, tokens, job.pairs, engine.n_layers, params=params, budgets=budgets,
                                    spacing=job.spacing)
        costs = pruning_costs(engine, eval_windows, sets, params=params, n_boot=job.n_boot, seed=job.seed,
                              batch_size=job.batch_size, device=loaded.device)
        written.append((pa.Table.from_pylist([meta | r for r in costs], schema=stats.PRUNING_SCHEMA), job.pruning_out,
                        prov | {"eval_spec": job.eval_data.as_dict(), "eval_sha256": eval_windows.sha256,
                                "eval_tokens": int(eval_windows.n_scored), "budgets": budgets,
                                "spacing": job.spacing}))
    write_parquets(written)
    return rows
