"""``run_pruning``: remove blocks of one checkpoint by every guide and baseline, measure the cost.

Per checkpoint (one output file, schema :data:`PRUNING_SCHEMA`, one row per guide x budget
[x random draw]):

* guides (static greedy of :mod:`swapkl.selection`, spacing Delta): ``interchange``,
  ``replacement_max``, ``replacement_mean``, ``deletion``, and the sanity bound
  ``anti_interchange`` (highest interchange scores first, same spacing);
* baselines: ``bi`` (ShortGPT, lowest BI, no spacing), ``angular`` (Gromov et al., contiguous
  block, metric selectable), ``sleb_iterative`` (:mod:`swapkl.sleb`, calibration windows, no
  spacing), ``random`` (``n_random`` seeded draws per budget under the same spacing, one row per
  draw with ``random_draw`` set) and ``random_mean`` (their mean, with ``delta_ppl_pct_sd``, ``_min``
  and ``_max`` over draws);
* ``base`` (budget 0): the unpruned model, whose perplexity is every row's ``base_ppl``;
* the paper's settings (:class:`swapkl.selection.SelectionOptions`, recorded in the provenance as
  ``selection``): scoring partners limited to a pair set, the tie-break of equal scores (default:
  deletion KL, then index), ``interchange_clustered`` / ``replacement_max_clustered`` (the greedy
  within a layer region), ``fixed`` (named fixed layer sets, ``fixed_set`` = the name, budget = the
  set's size, evaluated exactly like a guide's set) and the random baseline's own spacing.

Cost of a pruned model: sliding-window perplexity on the evaluation text
(:mod:`swapkl.perplexity`), ``delta_ppl_pct = 100 * (ppl / base_ppl - 1)``, each with a 95%
percentile bootstrap CI over evaluation windows (resamplings shared by all rows, so the delta CI
is paired); and ``kl_mean`` = token-weighted KL(p_base || p_pruned) over every valid token of the
probe windows, with a 95% bootstrap CI over those windows. Per-window NLL sums are kept
(``window_nll_sum``, ``window_tokens``) so later statistics (the I/R ratio) can be bootstrapped.

A guide whose greedy scan cannot reach a feasible budget (the scan may block more layers than
necessary) gets a row with ``feasible = false``, null ``removed_layers`` and NaN costs; a budget
above ``ceil(n_layers / (spacing + 1))`` is an error.

The calibration windows (SLEB) and the probe windows (the guides' scores, the KL) must come
from a source disjoint from the evaluation text unless ``allow_overlap`` is set (an explicit,
recorded opt-in to reproduce the paper, which used test text for both); the three source names are written in every row
(``eval_split``, ``calibration_split``, ``probe_split``) and in the provenance.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from swapkl import provenance
from swapkl.agreement import AGREEMENT_SCHEMA, agreement_rows
from swapkl.bootstrap import ratio_ci, ratio_mean, resample_indices
from swapkl.data import DataSpec, Windows, check_windows, load_windows
from swapkl.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.loading import load_model
from swapkl.pairs import removal
from swapkl.parquet_io import write_parquet
from swapkl.perplexity import EvalSpec, boot_log_ppl, load_eval_windows, percentile_ci, window_nll
from swapkl.probe import step_of
from swapkl.selection import (
    BudgetError,
    SelectionOptions,
    fixed_select,
    restrict_pairs,
    angular_table,
    bi_scores,
    contiguous_select,
    deletion_scores,
    greedy_select,
    layer_scores_from_pairs,
    lowest_select,
    max_feasible,
    pair_distances,
    random_rng,
    random_select,
)
from swapkl.sleb import sleb_iterative

log = logging.getLogger(__name__)

#: guides in output order
GUIDES = ("base", "interchange", "replacement_max", "replacement_mean", "deletion", "anti_interchange",
          "interchange_clustered", "replacement_max_clustered", "fixed",
          "bi", "angular", "sleb_iterative", "random", "random_mean")

PRUNING_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("guide", pa.string()), ("budget", pa.int64()), ("random_draw", pa.int64()), ("fixed_set", pa.string()),
    ("removed_layers", pa.list_(pa.int64())), ("feasible", pa.bool_()),
    ("ppl", pa.float64()), ("ppl_ci_low", pa.float64()), ("ppl_ci_high", pa.float64()),
    ("base_ppl", pa.float64()),
    ("delta_ppl_pct", pa.float64()), ("delta_ppl_pct_ci_low", pa.float64()), ("delta_ppl_pct_ci_high", pa.float64()),
    ("kl_mean", pa.float64()), ("kl_ci_low", pa.float64()), ("kl_ci_high", pa.float64()),
    ("n_draws", pa.int64()), ("delta_ppl_pct_sd", pa.float64()),
    ("delta_ppl_pct_min", pa.float64()), ("delta_ppl_pct_max", pa.float64()),
    ("spacing", pa.int64()), ("eval_split", pa.string()), ("calibration_split", pa.string()),
    ("probe_split", pa.string()), ("eval_window", pa.int64()), ("eval_stride", pa.int64()),
    ("eval_max_words", pa.int64()), ("n_eval_windows", pa.int64()), ("n_eval_tokens", pa.int64()),
    ("n_probe_seqs", pa.int64()), ("n_probe_tokens", pa.int64()),
    ("window_nll_sum", pa.list_(pa.float64())), ("window_tokens", pa.list_(pa.int64())),
])

_PROBE_COLUMNS = ("protocol", "layer_i", "layer_j", "n_layers", "kl_mean")
_REPR_COLUMNS = ("metric", "layer_i", "width", "value")


# ------------------------------------------------------------------------------------------ inputs


def _read_table(path, columns, what: str) -> tuple[pd.DataFrame, dict]:
    path = str(path)
    if not os.path.isfile(path):
        raise SwapKLError(f"{what} file {path!r} does not exist")
    try:
        df = pd.read_parquet(path)
    except Exception as e:
        raise SwapKLError(f"{what} file {path!r} is not a readable Parquet file: {e}") from e
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SwapKLError(f"{what} file {path!r} lacks columns {missing}")
    prov = provenance.read(path)
    return df, prov


def read_probe_inputs(paths: Sequence) -> tuple[pd.DataFrame, list[dict]]:
    """All probe rows of one checkpoint and each file's provenance."""
    if not paths:
        raise SwapKLError("no probe file given")
    frames, provs = [], []
    for p in paths:
        df, prov = _read_table(p, _PROBE_COLUMNS, "probe")
        frames.append(df)
        provs.append(prov)
    probe = pd.concat(frames, ignore_index=True)
    n = sorted(set(int(v) for v in probe["n_layers"]))
    if len(n) != 1:
        raise SwapKLError(f"probe files {list(map(str, paths))} disagree on n_layers: {n}")
    shas = sorted({p.get("weights_sha256") for p in provs if p.get("weights_sha256")})
    if len(shas) > 1:
        raise SwapKLError(f"probe files {list(map(str, paths))} were measured on different weights")
    return probe, provs


def _probe_data_spec(provs: list[dict]) -> DataSpec:
    specs = [p.get("data_spec") for p in provs]
    if any(s is None for s in specs):
        raise SwapKLError("a probe file records no data_spec in its provenance; pass probe_data explicitly")
    first = specs[0]
    if any(s != first for s in specs[1:]):
        raise SwapKLError("the probe files were measured on different windows; pass probe files of one probe run")
    return DataSpec(**first)


def _source_key(*, text_file=None, dataset=None, dataset_config=None, split=None, tokens=None):
    if text_file:
        return ("file", os.path.realpath(text_file))
    if tokens:
        return ("tokens", os.path.realpath(tokens))
    name = (dataset or "").lower()
    if "wikitext" in name and split in ("test", "validation"):
        # WikiText-2 and WikiText-103 share their validation and test articles
        return ("dataset", name, None, split)
    return ("dataset", name, dataset_config, split)


def check_disjoint(eval_spec: EvalSpec, other: DataSpec, role: str) -> None:
    """The evaluation text must not be the source of the calibration / probe windows."""
    a = _source_key(text_file=eval_spec.text_file, dataset=eval_spec.dataset,
                    dataset_config=eval_spec.dataset_config, split=eval_spec.split)
    b = _source_key(text_file=other.text_file, dataset=other.dataset, dataset_config=other.dataset_config,
                    split=other.split, tokens=other.tokens)
    if a == b:
        raise SwapKLError(
            f"the {role} windows ({other.describe()}) come from the evaluation text ({eval_spec.describe()}); "
            "use a disjoint split"
        )


def _check_budgets(budgets, n_layers: int, spacing: int) -> list[int]:
    try:
        out = sorted({int(b) for b in budgets})
    except (TypeError, ValueError) as e:
        raise SwapKLError(f"budgets must be integers, got {budgets!r}") from e
    if not out:
        raise SwapKLError("no pruning budget given")
    if out[0] < 1:
        raise SwapKLError(f"budgets must be >= 1 (budget 0 is the base row), got {out[0]}")
    top = min(max_feasible(n_layers, spacing), n_layers - 1)
    if out[-1] > top:
        raise SwapKLError(
            f"budget {out[-1]} is infeasible: with spacing {spacing} at most {top} of {n_layers} layers can be removed"
        )
    return out


# ------------------------------------------------------------------------------------------ selection


def _selections(probe: pd.DataFrame, rep: pd.DataFrame | None, n_layers: int, budgets: list[int], spacing: int,
                n_random: int, seed: int, angular_metric: str, sleb,
                options: SelectionOptions = SelectionOptions()) -> tuple[dict, dict[str, np.ndarray]]:
    """``{(guide, budget, draw): removed list or None}`` and the per-layer scores of the guides.

    A fixed set's key is ``("fixed", budget, name)``; a random draw's ``("random", budget, k)``.
    """
    sel: dict[tuple[str, int, int | str | None], list[int] | None] = {}
    scores: dict[str, np.ndarray] = {}
    protocols = set(probe["protocol"])

    def pair_scores(guide):
        return layer_scores_from_pairs(restrict_pairs(pair_distances(probe, guide), options.score_pairs, n_layers),
                                       n_layers)

    if "interchange" in protocols:
        scores["interchange"] = pair_scores("interchange")
    if "replacement" in protocols:
        for g in ("replacement_max", "replacement_mean"):
            scores[g] = pair_scores(g)
    if "deletion" in protocols:
        scores["deletion"] = deletion_scores(probe, n_layers)
    tiebreak = scores.get("deletion") if options.tie_break == "deletion" else None
    for g in ("interchange", "replacement_max", "replacement_mean", "deletion"):
        if g not in scores:
            log.warning("no %s rows in the probe files: guide %s skipped", g.split("_")[0], g)
    greedy = [(g, g, False, None) for g in ("interchange", "replacement_max", "replacement_mean", "deletion")
              if g in scores]
    if "interchange" in scores:
        greedy.append(("anti_interchange", "interchange", True, None))
    if options.clustered_region is not None:
        greedy += [(f"{g}_clustered", g, False, options.clustered_region)
                   for g in ("interchange", "replacement_max") if g in scores]
    for name, key, desc, region in greedy:
        for n in budgets:
            try:
                sel[(name, n, None)] = greedy_select(scores[key], n, spacing, descending=desc, tiebreak=tiebreak,
                                                     region=region)
            except BudgetError as e:
                log.warning("guide %s: %s", name, e)
                sel[(name, n, None)] = None
    if rep is not None:
        scores["bi"] = bi_scores(rep, n_layers)
        ang = angular_table(rep, angular_metric)
        scores["angular"] = np.array([ang.get((l, 1), np.nan) for l in range(n_layers)])
        for n in budgets:
            for name, fn in (("bi", lambda n: lowest_select(scores["bi"], n)),
                             ("angular", lambda n: contiguous_select(ang, n, n_layers))):
                try:
                    sel[(name, n, None)] = fn(n)
                except BudgetError as e:
                    log.warning("baseline %s: %s", name, e)
                    sel[(name, n, None)] = None
    if sleb is not None:
        scores["sleb_single"] = sleb.single_removal_increase(n_layers)
        for n in budgets:
            sel[("sleb_iterative", n, None)] = sleb.removed(n)
    for name, sets in options.fixed_sets.items():
        for layers in sets:
            chosen = fixed_select(layers, n_layers, name)
            sel[("fixed", len(chosen), name)] = chosen
    r_spacing = spacing if options.random_spacing is None else options.random_spacing
    for n in budgets:
        for k in range(n_random):
            sel[("random", n, k)] = random_select(n_layers, n, r_spacing, random_rng(seed, n, k))
    return sel, scores


# ------------------------------------------------------------------------------------------ costs


def _kl_on_windows(engine, windows: Windows, sets: list[tuple[int, ...]], batch_size: int, device: str):
    """Per-sequence KL sums of each removal set and the per-sequence token counts."""
    ids_all = torch.from_numpy(windows.input_ids)
    mask_all = torch.from_numpy(windows.attention_mask)
    n = ids_all.shape[0]
    kl = {s: np.zeros(n) for s in sets}
    tokens = windows.attention_mask.sum(1).astype(np.float64)
    for lo in range(0, n, batch_size):
        hi = min(n, lo + batch_size)
        state = engine.base_pass(ids_all[lo:hi].to(device), mask_all[lo:hi].to(device))
        for s in sets:
            st = engine.variant_seq_stats(state, removal(s, engine.n_layers))
            kl[s][lo:hi] = st.kl_sum.cpu().numpy()
        del state
    return kl, tokens


def _row_order(r: dict) -> tuple:
    return (GUIDES.index(r["guide"]), r.get("fixed_set") or "", r["budget"],
            -1 if r["random_draw"] is None else r["random_draw"])


def run_pruning(model: str, probe_files: Sequence, repr_file: str | None, out: str, *, revision: str | None = None,
                budgets: Sequence[int] = (1, 2, 3, 4, 5), spacing: int = 1, eval_data: dict | EvalSpec,
                calib_data: DataSpec, probe_data: DataSpec | None = None, n_random: int = 5, seed: int = 0,
                n_boot: int = 1000, angular_metric: str = "angular", dtype: str = "float32", device: str = "auto",
                batch_size: int = 8, chunk_tokens: int = 2048, metadata: dict | None = None,
                agreement_out: str | None = None, allow_pickle: bool = False,
                trust_remote_code: bool = False, selection: SelectionOptions | None = None,
                allow_overlap: bool = False) -> pd.DataFrame:
    """Prune one checkpoint by every guide and baseline at every budget; write ``out``.

    ``allow_overlap=True`` lets the probe or calibration windows come from the evaluation text (the
    paper used test text for both); off by default, recorded as ``allow_overlap`` in the provenance.
    ``probe_data`` (the windows for the pruned model's KL) defaults to the ``data_spec`` recorded
    in the probe files' provenance, and its token hash must match theirs. Returns the rows written.
    """
    eval_spec = EvalSpec.from_dict(eval_data)
    eval_spec.check()
    if spacing < 0:
        raise SwapKLError(f"spacing must be >= 0, got {spacing}")
    if n_random < 0 or n_boot < 0 or batch_size < 1:
        raise SwapKLError(f"n_random and n_boot must be >= 0 and batch_size >= 1 "
                          f"(got {n_random}, {n_boot}, {batch_size})")
    if angular_metric not in ("angular", "angular_last"):
        raise SwapKLError(f"unknown angular metric {angular_metric!r}: choose 'angular' or 'angular_last'")
    if not isinstance(calib_data, DataSpec):
        raise SwapKLError("calib_data must be a swapkl.data.DataSpec")
    metadata = dict(metadata or {})

    probe, probe_provs = read_probe_inputs(probe_files)
    rep = _read_table(repr_file, _REPR_COLUMNS, "representation")[0] if repr_file else None
    if probe_data is None:
        probe_data = _probe_data_spec(probe_provs)
    for spec, role in ((calib_data, "calibration"), (probe_data, "probe")):
        try:
            check_disjoint(eval_spec, spec, role)
        except SwapKLError as e:
            if not allow_overlap:
                raise
            log.warning("allow_overlap: %s (reproducing a protocol that did this; recorded in the provenance)", e)

    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, need_tokenizer=True)
    dev = loaded.device
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    n_layers = engine.n_layers
    probe_layers = int(probe["n_layers"].iloc[0])
    if probe_layers != n_layers:
        raise SwapKLError(f"the probe files describe {probe_layers} layers but {model!r} has {n_layers}")
    shas = {p.get("weights_sha256") for p in probe_provs} - {None}
    if shas and loaded.weights_sha256 not in shas:
        raise SwapKLError(f"the probe files were measured on other weights than {model!r}"
                          f"{'@' + revision if revision else ''}")
    budgets = _check_budgets(budgets, n_layers, spacing)

    a = engine.adapter
    probe_windows = load_windows(probe_data, loaded.tokenizer)
    check_windows(probe_windows, a.vocab_size, a.max_positions)
    probe_tok = {p.get("tokens_sha256") for p in probe_provs} - {None}
    if probe_tok and probe_windows.sha256 not in probe_tok:
        raise SwapKLError(f"the windows rebuilt from {probe_data.describe()} differ from the probe files' windows")
    calib = load_windows(calib_data, loaded.tokenizer)
    check_windows(calib, a.vocab_size, a.max_positions)
    ew = load_eval_windows(eval_spec, loaded.tokenizer, a.max_positions)
    if int(ew.input_ids.max()) >= a.vocab_size:
        raise SwapKLError(f"token id {int(ew.input_ids.max())} of the evaluation text is outside the vocabulary")

    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    log.info("pruning %s@%s: %d layers, budgets %s, %d evaluation windows (%d scored tokens)",
             label, rev, n_layers, budgets, ew.n_windows, ew.n_scored)

    sleb = sleb_iterative(engine, calib, max(budgets), batch_size=batch_size, device=dev)
    selection = selection or SelectionOptions()
    sel, scores = _selections(probe, rep, n_layers, budgets, spacing, n_random, seed, angular_metric, sleb, selection)

    sets = sorted({tuple(r) for r in sel.values() if r is not None})
    variants = [removal(s, n_layers) for s in sets]
    base_nll, win_tok, nll_list = window_nll(engine, ew, variants, batch_size=batch_size, device=dev)
    nll = dict(zip(sets, nll_list))
    kl, seq_tok = _kl_on_windows(engine, probe_windows, sets, batch_size, dev)

    eval_idx = resample_indices(ew.n_windows, n_boot, seed)
    probe_idx = resample_indices(len(seq_tok), n_boot, seed)
    base_lp = base_nll.sum() / win_tok.sum()
    base_boot = boot_log_ppl(base_nll, win_tok, eval_idx)
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=n_layers, spacing=spacing,
                eval_split=eval_spec.describe(), calibration_split=calib_data.describe(),
                probe_split=probe_data.describe(), eval_window=eval_spec.window, eval_stride=eval_spec.stride,
                eval_max_words=eval_spec.max_words, n_eval_windows=ew.n_windows, n_eval_tokens=ew.n_scored,
                n_probe_seqs=int(len(seq_tok)), n_probe_tokens=int(seq_tok.sum()), base_ppl=float(np.exp(base_lp)))

    def cost_row(guide, budget, draw, removed, nll_sum, kl_sum):
        lp = nll_sum.sum() / win_tok.sum()
        boot = boot_log_ppl(nll_sum, win_tok, eval_idx)
        lo, hi = percentile_ci(np.exp(boot))
        dlo, dhi = percentile_ci(100.0 * np.expm1(boot - base_boot))
        klo, khi = (0.0, 0.0) if guide == "base" else ratio_ci(kl_sum, seq_tok, probe_idx)
        return dict(meta, guide=guide, budget=budget, random_draw=draw, removed_layers=list(removed), feasible=True,
                    ppl=float(np.exp(lp)), ppl_ci_low=lo, ppl_ci_high=hi,
                    delta_ppl_pct=float(100.0 * np.expm1(lp - base_lp)), delta_ppl_pct_ci_low=dlo,
                    delta_ppl_pct_ci_high=dhi, kl_mean=ratio_mean(kl_sum, seq_tok), kl_ci_low=klo, kl_ci_high=khi,
                    window_nll_sum=nll_sum.tolist(), window_tokens=win_tok.astype(np.int64).tolist())

    nan = float("nan")
    rows = [cost_row("base", 0, None, [], base_nll, np.zeros(len(seq_tok)))]
    for (guide, n, tag), removed in sel.items():
        draw, fixed = (tag, None) if guide != "fixed" else (None, tag)
        if removed is None:
            rows.append(dict(meta, guide=guide, budget=n, random_draw=draw, removed_layers=None, feasible=False,
                             ppl=nan, ppl_ci_low=nan, ppl_ci_high=nan, delta_ppl_pct=nan,
                             delta_ppl_pct_ci_low=nan, delta_ppl_pct_ci_high=nan, kl_mean=nan, kl_ci_low=nan,
                             kl_ci_high=nan))
            continue
        key = tuple(removed)
        rows.append(dict(cost_row(guide, n, draw, removed, nll[key], kl[key]), fixed_set=fixed))
    for n in budgets:
        draws = [r for r in rows if r["guide"] == "random" and r["budget"] == n]
        if draws:
            d = np.array([r["delta_ppl_pct"] for r in draws])
            rows.append(dict(meta, guide="random_mean", budget=n, random_draw=None, removed_layers=None, feasible=True,
                             ppl=float(np.mean([r["ppl"] for r in draws])), ppl_ci_low=nan, ppl_ci_high=nan,
                             delta_ppl_pct=float(d.mean()), delta_ppl_pct_ci_low=nan, delta_ppl_pct_ci_high=nan,
                             kl_mean=float(np.mean([r["kl_mean"] for r in draws])), kl_ci_low=nan, kl_ci_high=nan,
                             n_draws=len(draws), delta_ppl_pct_sd=float(d.std(ddof=1)) if len(d) > 1 else nan,
                             delta_ppl_pct_min=float(d.min()), delta_ppl_pct_max=float(d.max())))
    rows.sort(key=_row_order)
    table = pa.Table.from_pylist(rows, schema=PRUNING_SCHEMA)

    prov = provenance.build(
        loaded, None, model=label, revision_label=rev, budgets=budgets, spacing=spacing, n_random=n_random, seed=seed,
        n_boot=n_boot, angular_metric=angular_metric, batch_size=batch_size, selection=selection.as_dict(),
        bos_token_id=probe_windows.bos_token_id, bos_prepended=probe_windows.bos_token_id is not None,
        allow_overlap=bool(allow_overlap),
        eval_spec=eval_spec.as_dict(), eval_split=eval_spec.describe(), eval_tokens_sha256=ew.sha256,
        calibration_spec=calib_data.as_dict(), calibration_split=calib_data.describe(),
        calibration_tokens_sha256=calib.sha256, probe_spec=probe_data.as_dict(), probe_split=probe_data.describe(),
        probe_tokens_sha256=probe_windows.sha256, probe_files=[str(p) for p in probe_files],
        repr_file=None if repr_file is None else str(repr_file), guides=sorted({r["guide"] for r in rows}),
        sleb_order=sleb.order, **metadata)
    if agreement_out is not None:
        arows = agreement_rows(scores, dict(model=label, revision=rev, step=step_of(rev), n_layers=n_layers))
        write_parquet(pa.Table.from_pylist(arows, schema=AGREEMENT_SCHEMA), agreement_out, prov)
    write_parquet(table, out, prov)
    log.info("wrote %s (%d rows, %d distinct pruned models)", out, len(rows), len(sets))
    return table.to_pandas()


# ------------------------------------------------------------------------------------------ aggregation


def _read_rows(path, schema: pa.Schema, what: str) -> tuple[pa.Table, dict]:
    path = str(path)
    if not os.path.isfile(path):
        raise SwapKLError(f"{what} file {path!r} does not exist")
    try:
        table = pq.read_table(path)
    except Exception as e:
        raise SwapKLError(f"{what} file {path!r} is not a readable Parquet file: {e}") from e
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise SwapKLError(f"{what} file {path!r} lacks columns {missing}")
    try:
        table = table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SwapKLError(f"{what} file {path!r} has columns of the wrong type: {e}") from e
    return table, provenance.read(path)


def _concat(paths: Sequence, schema: pa.Schema, what: str) -> tuple[pa.Table, list[dict]]:
    tables, provs, seen = [], [], {}
    for p in paths:
        t, prov = _read_rows(p, schema, what)
        for key in sorted(set(zip(t.column("model").to_pylist(), t.column("revision").to_pylist()))):
            if key in seen:
                raise SwapKLError(f"{what} files {seen[key]!r} and {str(p)!r} both hold {key[0]}@{key[1]}")
            seen[key] = str(p)
        tables.append(t)
        provs.append(dict(path=str(p), **{k: prov.get(k) for k in (
            "model", "revision_label", "weights_sha256", "commit", "eval_split", "calibration_split", "probe_split",
            "config_sha256")}))
    if not tables:
        raise SwapKLError(f"no {what} file given")
    return pa.concat_tables(tables), provs


def _sort(df: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    step = df["step"].astype("float64").fillna(np.inf)
    return (df.assign(_step=step).sort_values(["model", "_step", "revision", *extra], kind="stable")
              .drop(columns="_step").reset_index(drop=True))


def aggregate_pruning(inputs: Sequence, out: str, *, agreement_inputs: Sequence = (),
                      agreement_out: str | None = None) -> pd.DataFrame:
    """Concatenate per-checkpoint pruning files (and agreement files) into one table each.

    Rows are sorted by model, step (revisions without a step last), revision, guide (the order of
    :data:`GUIDES`), budget and random draw. A checkpoint present in two inputs is an error.
    """
    if bool(agreement_inputs) != (agreement_out is not None):
        raise SwapKLError("give both agreement inputs and agreement_out, or neither")
    table, provs = _concat(inputs, PRUNING_SCHEMA, "pruning")
    df = table.to_pandas()
    unknown = sorted(set(df["guide"]) - set(GUIDES))
    if unknown:
        raise SwapKLError(f"pruning files hold unknown guides {unknown}")
    df["_g"] = df["guide"].map(GUIDES.index)
    df["_d"] = df["random_draw"].astype("float64").fillna(-1)
    df["_f"] = df["fixed_set"].fillna("")
    df = _sort(df, ["_g", "_f", "budget", "_d"]).drop(columns=["_g", "_d", "_f"])
    prov = dict(provenance.software_versions(), inputs=provs)
    write_parquet(pa.Table.from_pandas(df, schema=PRUNING_SCHEMA, preserve_index=False), out, prov)
    if agreement_out is not None:
        at, aprovs = _concat(agreement_inputs, AGREEMENT_SCHEMA, "agreement")
        adf = _sort(at.to_pandas(), ["guide", "reference"])
        write_parquet(pa.Table.from_pandas(adf, schema=AGREEMENT_SCHEMA, preserve_index=False), agreement_out,
                      dict(provenance.software_versions(), inputs=aprovs))
    log.info("wrote %s (%d rows from %d files)", out, len(df), len(provs))
    return df


def read_pruning(path) -> pd.DataFrame:
    return _read_rows(path, PRUNING_SCHEMA, "pruning")[0].to_pandas()


def read_agreement(path) -> pd.DataFrame:
    return _read_rows(path, AGREEMENT_SCHEMA, "agreement")[0].to_pandas()


# ------------------------------------------------------------------------------------------ I/R ratio


def ir_ratios(df: pd.DataFrame, *, numerator: str = "interchange", denominator: str = "replacement_max",
              n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Pruning I/R ratio ``delta_ppl_pct(numerator) / delta_ppl_pct(denominator)`` per checkpoint and
    budget, with a 95% paired bootstrap CI over evaluation windows (both guides and the base model
    resampled with the same windows; seed ``seed``).

    Columns: model, revision, step, budget, delta_num, delta_den, ir_ratio, ir_ci_low, ir_ci_high.
    """
    rows = []
    for (model, rev), g in df.groupby(["model", "revision"], sort=False):
        base = g[g["guide"] == "base"]
        if base.empty:
            continue
        b_nll = np.asarray(base["window_nll_sum"].iloc[0], dtype=np.float64)
        tok = np.asarray(base["window_tokens"].iloc[0], dtype=np.float64)
        idx = resample_indices(len(tok), n_boot, seed)
        b_boot = boot_log_ppl(b_nll, tok, idx)
        for n in sorted(set(g["budget"]) - {0}):
            num = g[(g["guide"] == numerator) & (g["budget"] == n) & g["feasible"]]
            den = g[(g["guide"] == denominator) & (g["budget"] == n) & g["feasible"]]
            if num.empty or den.empty:
                continue
            dn, dd = float(num["delta_ppl_pct"].iloc[0]), float(den["delta_ppl_pct"].iloc[0])
            bn = np.expm1(boot_log_ppl(np.asarray(num["window_nll_sum"].iloc[0]), tok, idx) - b_boot)
            bd = np.expm1(boot_log_ppl(np.asarray(den["window_nll_sum"].iloc[0]), tok, idx) - b_boot)
            with np.errstate(divide="ignore", invalid="ignore"):
                lo, hi = percentile_ci(bn / bd)
                ratio = dn / dd if dd != 0 else float("nan")
            rows.append(dict(model=model, revision=rev, step=g["step"].iloc[0], budget=int(n), delta_num=dn,
                             delta_den=dd, ir_ratio=ratio, ir_ci_low=lo, ir_ci_high=hi))
    cols = ["model", "revision", "step", "budget", "delta_num", "delta_den", "ir_ratio", "ir_ci_low", "ir_ci_high"]
    return pd.DataFrame(rows, columns=cols)
