"""The rows of one checkpoint in the aggregate (:mod:`swapkl.probes.aggregate`): its probe and representation
files grouped and checked for agreement, the directed rows with their confidence intervals, the pair rows and
the pair-set summaries, and the representation rows."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.probes.aggregate_inputs import ProbeInput, ReprInput
from swapkl.probes.pair_statistics import (bootstrap_gaps, checkpoint_seed, in_pair_set, missing_pairs,
                                           pair_gap_intervals, pair_set_column, pair_table, summarise_set)
from swapkl.stats.bootstrap import resample_indices
from swapkl.stats.intervals import ratio_intervals
from swapkl.tables.provenance import check_comparable

log = logging.getLogger(__name__)


class CheckpointInputs:
    """All inputs of one (model, revision)."""

    def __init__(self, model: str, revision: str, step: int | None, n_layers: int, first: str):
        self.model, self.revision, self.step, self.n_layers = model, revision, step, n_layers
        self.first = first
        self.probes: list[ProbeInput] = []
        self.reprs: list[ReprInput] = []
        self.fields: dict[str, tuple] = {}  # provenance field -> (value, first file)
        self.sha: str | None = None
        self.config_sha: str | None = None
        self.n_seqs: int | None = None

    def add(self, item: ProbeInput | ReprInput) -> None:
        if item.n_layers != self.n_layers:
            raise SwapKLError(f"{item.path}: mixed n_layers within checkpoint {self.model} "
                              f"{self.revision}: {item.n_layers} here, {self.n_layers} in {self.first}")
        if item.step != self.step:
            raise SwapKLError(f"{item.path}: step {item.step} differs from step {self.step} in "
                              f"{self.first} for {self.model} {self.revision}")
        # the files of one checkpoint must measure the same function on the same data
        check_comparable(self.fields, item.path, item.provenance, f"{self.model} {self.revision}")
        self.sha = self.fields["weights_sha256"][0]
        self.config_sha = self.fields["model_config_sha256"][0]
        if isinstance(item, ProbeInput):
            if self.n_seqs is not None and item.n_seqs != self.n_seqs:
                raise SwapKLError(f"{item.path}: n_seqs={item.n_seqs} but {self.n_seqs} in other "
                                  f"files of {self.model} {self.revision}; variants must share sequences")
            self.n_seqs = item.n_seqs
            self.probes.append(item)
        else:
            n_seqs = int(item.rows["n_seqs"].iloc[0])
            if self.n_seqs is not None and n_seqs != self.n_seqs:
                raise SwapKLError(f"{item.path}: n_seqs={n_seqs} but {self.n_seqs} in other files of {self.model} "
                                  f"{self.revision}; the representation rows must come from the probed sequences")
            self.n_seqs = n_seqs
            self.reprs.append(item)


def group_checkpoints(probes: list[ProbeInput], reprs: list[ReprInput]) -> dict[tuple[str, str], CheckpointInputs]:
    groups: dict[tuple[str, str], CheckpointInputs] = {}
    for item in [*probes, *reprs]:
        key = (item.model, item.revision)
        if key not in groups:
            groups[key] = CheckpointInputs(item.model, item.revision, item.step, item.n_layers, item.path)
        groups[key].add(item)
    return groups


def _directed(ck: CheckpointInputs) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Directed rows of a checkpoint from all its probe files, with their per-sequence arrays
    (KL sums, token counts, NLL sums, NLL token counts).

    Every probe file carries the base row; the first one (by path) is kept, and a warning is
    logged when the files disagree on the base NLL. Any other variant present in two files is
    an error.
    """
    frames, arrays, seen = [], [], {}
    base_nll: tuple[float, str] | None = None
    for p in sorted(ck.probes, key=lambda x: x.path):
        keep = np.ones(len(p.rows), dtype=bool)
        for r, k in enumerate(zip(p.rows["protocol"], p.rows["layer_i"].astype(object),
                                  p.rows["layer_j"].astype(object), p.rows["head"].astype(object))):
            k = tuple(None if pd.isna(v) else v for v in k)
            if k[0] == "base":
                nll = float(p.rows["nll_mean"].iloc[r])
                if base_nll is None:
                    base_nll = (nll, p.path)
                    continue
                if not np.isclose(nll, base_nll[0], rtol=1e-6, atol=1e-9, equal_nan=True):
                    log.warning("%s: base NLL %.6g differs from %.6g in %s (%s %s)", p.path, nll,
                                base_nll[0], base_nll[1], ck.model, ck.revision)
                keep[r] = False
                continue
            if k in seen:
                head = "" if k[3] is None else f" head {k[3]}"
                raise SwapKLError(f"{p.path}: variant {k[0]} {k[1]},{k[2]}{head} of {ck.model} "
                                  f"{ck.revision} is also in {seen[k]}")
            seen[k] = p.path
        frames.append(p.rows[keep])
        arrays.append([a[keep] for a in (p.seq_kl, p.seq_tokens, p.seq_nll, p.seq_nll_tokens)])
    df = pd.concat(frames, ignore_index=True)
    return (df, *(np.vstack(a) for a in zip(*arrays)))


def _with_intervals(directed: pd.DataFrame, seq_kl, seq_tok, seq_nll, seq_nll_tok, idx) -> pd.DataFrame:
    """The directed rows with the CIs of kl_mean and nll_mean (the base row's KL is 0 by definition)."""
    kl_lo, kl_hi = ratio_intervals(seq_kl, seq_tok, idx)
    base = (directed["protocol"] == "base").to_numpy()
    kl_lo[base], kl_hi[base] = 0.0, 0.0
    nll_lo, nll_hi = ratio_intervals(seq_nll, seq_nll_tok, idx)
    return directed.assign(kl_ci_low=kl_lo, kl_ci_high=kl_hi, nll_ci_low=nll_lo, nll_ci_high=nll_hi)


def checkpoint_rows(ck: CheckpointInputs, sets: list[str], all_sets: list[str], dup: str | None,
                     n_boot: int, seed: int) -> dict[str, pd.DataFrame]:
    common = {"model": ck.model, "revision": ck.revision, "step": ck.step,
              "n_layers": ck.n_layers, "duplicate_of": dup}
    out: dict[str, pd.DataFrame] = {}
    idx = resample_indices(ck.n_seqs, n_boot, seed)  # the CIs of the directed and repr rows, paired
    if ck.probes:
        directed, seq_kl, seq_tok, seq_nll, seq_nll_tok = _directed(ck)
        directed = _with_intervals(directed, seq_kl, seq_tok, seq_nll, seq_nll_tok, idx)
        d = directed.drop(columns=["model", "revision", "step", "n_layers"]).assign(**common)
        out["directed"] = d.assign(kind="directed")
        pairs = pair_table(directed)
        row_index = pairs.attrs["row_index"]
        for s in all_sets:
            pairs[pair_set_column(s)] = in_pair_set(s, pairs["layer_i"], pairs["layer_j"], ck.n_layers)
        files = ", ".join(p.path for p in ck.probes)
        for s in sets:
            miss = missing_pairs(pairs, s, ck.n_layers)
            if miss:
                raise SwapKLError(f"{files}: pair set {s} of {ck.model} {ck.revision} needs pair "
                                  f"{miss[0][0]},{miss[0][1]} ({len(miss)} missing), which was not "
                                  "probed by both replacement directions and interchange")
        boot = None
        if len(pairs) and n_boot > 0:  # every pair's gap with its CI, and the pair sets' mean gaps
            boot = bootstrap_gaps(seq_kl, seq_tok, row_index, n_boot,
                                  checkpoint_seed(seed, ck.model, ck.revision))
        low, high = pair_gap_intervals(None if boot is None else boot["max"], len(pairs))
        out["pair"] = pairs.assign(ci_low=low, ci_high=high, kind="pair", **common)
        base = directed[directed["protocol"] == "base"]
        n_tokens = int((base if len(base) else directed)["n_tokens"].iloc[0])
        summ = []
        for s in sets:
            member = pairs[pair_set_column(s)].to_numpy(dtype=bool)
            row = {"pair_set": s, **summarise_set(pairs, member, boot), "n_boot": n_boot,
                   "n_seqs": ck.n_seqs, "n_tokens": n_tokens}
            summ.append(row)
        if summ:
            out["summary"] = pd.DataFrame(summ).assign(kind="summary", **common)
    if ck.reprs:
        r = pd.concat([x.rows for x in ck.reprs], ignore_index=True)
        lo, hi = ratio_intervals(np.vstack([x.seq_sum for x in ck.reprs]), np.vstack([x.seq_count for x in ck.reprs]),
                                 idx)
        r = r.assign(ci_low=lo, ci_high=hi)
        r = r.drop(columns=["model", "revision", "step", "n_layers"]).assign(kind="repr", **common)
        out["repr"] = r
    return out
