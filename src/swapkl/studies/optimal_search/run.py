"""The exact removal-set search on one checkpoint: calibration NLL on the engine for every removal set the four
searches of :func:`swapkl.pruning.optimal.compare` ask for, one table (in memory), written as Parquet with its
provenance by :func:`run_optimal_search`."""

from __future__ import annotations

import pyarrow as pa

from swapkl.data.windows import Windows, check_windows, load_windows
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.pruning.optimal import compare
from swapkl.pruning.sleb import calibration_nll
from swapkl.studies.optimal_search.jobs import SearchJob
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet


def check_budgets(budgets, n_layers: int) -> None:
    """Every budget removes at least one block and leaves at least one."""
    bad = [n for n in budgets if not 1 <= n < n_layers]
    if bad:
        raise SwapKLError(f"budgets {bad} are not between 1 and {n_layers - 1} for this {n_layers}-block model")


def search_rows(engine: ProbeEngine, calib: Windows, budgets, *, beam_width: int = 3, max_evals: int = 5000,
                batch_size: int = 8, labels: dict | None = None) -> list[dict]:
    """One row per budget and method of the four searches on the model of ``engine``, each removal set scored by
    the pruned model's NLL on ``calib``, with the columns ``labels`` (``model``, ``revision``) (in memory: nothing
    is read or written)."""
    check_budgets(budgets, engine.n_layers)
    dev = str(engine.unemb.weight.device)
    base, _ = calibration_nll(engine, calib, [], batch_size=batch_size, device=dev)

    def cost(sets):
        return calibration_nll(engine, calib, sets, batch_size=batch_size, device=dev)[1]

    rows = compare(cost, engine.n_layers, list(budgets), base_cost=base, beam_width=beam_width, max_evals=max_evals)
    for r in rows:
        r.update(**(labels or {}), n_layers=engine.n_layers, base_cost=base, objective="calibration_nll")
    return rows


def run_optimal_search(job: SearchJob) -> None:
    """Greedy, beam, best-first and (where affordable) exhaustive search by calibration NLL on the checkpoint of a
    :class:`~swapkl.studies.optimal_search.jobs.SearchJob` (``run_optimal_search(job)``), into its ``out``: one
    Parquet table with provenance, its rows labelled by the job's ``metadata`` (default: the loaded model's id and
    revision)."""
    job = SearchJob.checked(job)
    check_writable(job.out)
    metadata = dict(job.metadata or {})
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, **(job.placement or {}))
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens)
    check_budgets(job.budgets, engine.n_layers)  # before the windows are read
    calib = load_windows(job.calibration, loaded.tokenizer)
    check_windows(calib, engine.adapter.vocab_size, engine.adapter.max_positions)
    labels = {"model": metadata.pop("model", None) or loaded.model_id,
              "revision": metadata.pop("revision", None) or loaded.revision}
    rows = search_rows(engine, calib, job.budgets, beam_width=job.beam_width, max_evals=job.max_evals,
                       batch_size=job.batch_size, labels=labels)
    prov = provenance.build(loaded, calib, calibration_spec=job.calibration.as_dict(), budgets=list(job.budgets),
                            beam_width=job.beam_width, max_evals=job.max_evals, **metadata,
                            bound="monotone cost assumed: cost(S + b) >= cost(S); certified = no violation seen")
    write_parquet(pa.Table.from_pylist(rows), job.out, prov)
