"""The optimal-search study on one checkpoint (calibration NLL on the engine, a Parquet table with
provenance) and the cost model that projects removal-set searches to large models.

Cost model: a search's wall time is ``n_evals x seconds per evaluation / n_gpus``, where one evaluation
is one pass of the pruned model over the calibration set. Assumptions, stated where they are used:

* the seconds per evaluation are what the paper's own runs imply: its accuracy-guided greedy prune of
  LLaMA3-8B (32 blocks, 25% = 8 removed) took 4.6 h for ``greedy_evals(32, 8) = 228`` evaluations on
  one GPU; its 50% prune of LLaMA3-70B (80 blocks, 40 removed) was estimated at 1.1 to 8.5 days for
  ``greedy_evals(80, 40) = 2420`` evaluations on two H100s (the range: the calibration set);
* evaluations of different sets are independent, so ``r`` model replicas divide the time by ``r`` with
  no overhead (optimistic). A replica is one GPU for LLaMA3-8B and the pair of H100s for LLaMA3-70B
  (its weights do not fit one): one or two GPUs for 8B, two or four for 70B;
* the engine's resumption (each set restarts from its first removed slot) is ignored: a full forward.
"""

from __future__ import annotations

import math

import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.pruning.optimal import compare
from swapkl.tables import provenance
from swapkl.data.windows import check_windows, load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.pruning.sleb import calibration_nll

#: (model, blocks, removed, hours low, hours high, GPUs per replica) -- the paper's figures, on one replica
PAPER_RUNS = (("LLaMA3-8B", 32, 8, 4.6, 4.6, 1), ("LLaMA3-70B", 80, 40, 1.1 * 24, 8.5 * 24, 2))


def greedy_evals(n_layers: int, n: int) -> int:
    """Evaluations of greedy iterative pruning (SLEB / accuracy-guided): L + (L - 1) + ... for n steps."""
    return sum(n_layers - k for k in range(n))


def beam_evals(n_layers: int, n: int, width: int = 3) -> int:
    """An upper bound on a width-``w`` beam's evaluations seeded by every block (distinct sets scored)."""
    return n_layers + sum(min(width * (n_layers - k), math.comb(n_layers, k + 1)) for k in range(1, n))


def projected_hours(n_evals: float, seconds_per_eval: float, replicas: int = 1) -> float:
    """Wall hours of ``n_evals`` evaluations at ``seconds_per_eval`` each, split over ``replicas``."""
    if replicas < 1 or seconds_per_eval < 0 or n_evals < 0:
        raise SwapKLError("the cost model needs replicas >= 1 and non-negative evaluations and seconds")
    return n_evals * seconds_per_eval / replicas / 3600.0


def cost_table(replicas=(1, 2), best_first_fraction: float | None = None) -> list[dict]:
    """Projected hours per model, method and number of model replicas. ``best_first_fraction``: the best-first search's
    measured evaluations as a fraction of exhaustive enumeration (from the demo), applied to C(L, n) -- a
    rough extrapolation, since the fraction depends on the model's cost landscape."""
    rows = []
    for model, L, n, lo_h, hi_h, paper_gpus in PAPER_RUNS:
        per_eval = [h * 3600.0 / greedy_evals(L, n) for h in (lo_h, hi_h)]  # seconds on one replica
        evals = {"greedy": greedy_evals(L, n), "beam3": beam_evals(L, n, 3), "exhaustive": math.comb(L, n)}
        if best_first_fraction is not None:
            evals["best_first (demo fraction)"] = math.comb(L, n) * best_first_fraction
        for method, e in evals.items():
            for r in replicas:
                lo, hi = (projected_hours(e, s, r) for s in per_eval)
                rows.append(dict(model=model, n_layers=L, removed=n, method=method, n_evals=float(e), replicas=r,
                                 gpus=r * paper_gpus, hours_low=lo, hours_high=hi, paper_hours_low=lo_h,
                                 paper_hours_high=hi_h))
    return rows


def run_optimal_search(model: str, calib_data, out: str, *, budgets: list[int], revision: str | None = None,
                       beam_width: int = 3, max_evals: int = 5000, dtype: str = "float32", device: str = "auto",
                       batch_size: int = 8, chunk_tokens: int = 2048, allow_pickle: bool = False,
                       trust_remote_code: bool = False, label: str | None = None,
                       revision_label: str | None = None) -> None:
    """Greedy, beam, best-first and (where affordable) exhaustive search by calibration NLL on one
    checkpoint, into one Parquet table with provenance. ``label`` / ``revision_label``: the names the table
    gives the model and revision (default: the loaded model's id and revision)."""
    check_writable(out)
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code)
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    bad = [n for n in budgets if not 1 <= n < engine.n_layers]
    if bad:
        raise SwapKLError(f"budgets {bad} are not between 1 and {engine.n_layers - 1} for this "
                          f"{engine.n_layers}-block model")
    calib = load_windows(calib_data, loaded.tokenizer)
    check_windows(calib, engine.adapter.vocab_size, engine.adapter.max_positions)
    dev = str(engine.unemb.weight.device)
    base, _ = calibration_nll(engine, calib, [], batch_size=batch_size, device=dev)

    def cost(sets):
        return calibration_nll(engine, calib, sets, batch_size=batch_size, device=dev)[1]

    rows = compare(cost, engine.n_layers, budgets, base_cost=base, beam_width=beam_width, max_evals=max_evals)
    for r in rows:
        r.update(model=label or loaded.model_id, revision=revision_label or loaded.revision, n_layers=engine.n_layers, base_cost=base,
                 objective="calibration_nll")
    prov = provenance.build(loaded, calib, calibration_spec=calib_data.as_dict(), budgets=list(budgets),
                            beam_width=beam_width, max_evals=max_evals,
                            bound="monotone cost assumed: cost(S + b) >= cost(S); certified = no violation seen")
    write_parquet(pa.Table.from_pylist(rows), out, prov)
