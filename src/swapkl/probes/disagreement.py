"""A map of how much every test of layer equivalence disagrees, for one checkpoint.

Every test scores items with "low = equivalent / safe to remove":

* pair level (unordered pairs i < j): ``replacement_max`` = max(KL(M_{i<-j}), KL(M_{j<-i})),
  ``replacement_fwd`` = KL(M_{i<-j}) (one direction, as the paper's trajectory ran it), ``interchange``,
  ``healed_replacement`` (max of the healed directions) and ``healed_interchange`` after the last heal step,
  and ``<test>@<member>`` for the other members of a seed family probed on the same windows;
* block level: ``deletion`` KL, ``healed_deletion``, ShortGPT ``bi``, the width-1 ``angular`` distance,
  ``accrel`` (accuracy relevance averaged over tasks, where measured), and the pair tests turned into block
  scores the way pruning scores layers, ``s(i) = min over j of d(i, j)`` (``replacement_max``,
  ``interchange``).

For each two tests of a level, over the items both score: Spearman's rho and Kendall's tau-b
(:func:`swapkl.stats.agreement.compare`, scipy), with percentile bootstrap CIs over the probe windows: one set of
window resamplings (:func:`swapkl.stats.bootstrap.resample_indices`) recomputes every per-window-sum score (and the
max / min built on them) together, so the CIs are paired; accuracy relevance has no windows and stays fixed.

Two rankings of fewer than :data:`MIN_ITEMS` (8) common items are too few to test: the row keeps its point
estimates, its CIs are NaN and ``too_few_items`` is true. With n items the exact permutation null of Spearman's
rho (and of Kendall's tau) is so coarse that only near-perfect agreement separates from chance: the smallest
|rho| significant at two-sided 5% is 0.79 for n = 7, 0.89 for n = 6, 1 for n = 5, and no value is for n <= 4
(tau: 0.71, 0.87, 1, none), and rho takes few values (4 for n = 3, 11 for n = 4, 57 for n = 7), so a
percentile bootstrap over windows collapses onto one of them (a CI of [1, 1] for 3 items ranked alike in most
resamples) and its width says nothing about the agreement. From n = 8 on, |rho| >= 0.74 (tau >= 0.64) is
significant and rho takes 85 values.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from swapkl.stats.agreement import compare
from swapkl.stats.rank_correlation import kendall, spearman
from swapkl.stats.bootstrap import percentile_ci, resample_indices
from swapkl.errors import SwapKLError
from swapkl.probes.table_jobs import DisagreementJob
from swapkl.options import require_int
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import PROBE_SCHEMA, REPR_SCHEMA, read_frame, read_relevance

COLUMNS = ("model", "revision", "level", "test_a", "test_b", "n_items", "spearman", "spearman_ci_low",
           "spearman_ci_high", "kendall", "kendall_ci_low", "kendall_ci_high", "n_boot", "too_few_items")

#: the fewest common items two rankings need for their CIs (module docstring)
MIN_ITEMS = 8


def _sums(rows: pd.DataFrame, num: str, den: str) -> tuple[np.ndarray, np.ndarray]:
    return (np.stack([np.asarray(v, dtype=np.float64) for v in rows[num]]),
            np.stack([np.asarray(v, dtype=np.float64) for v in rows[den]]))


class Scores:
    """Per-item scores of every test under the point estimate (resample None) and each window resampling."""

    def __init__(self, n_windows: int):
        self.n_windows = n_windows
        self.tests: dict[str, tuple[str, list, callable]] = {}

    def add(self, name: str, level: str, items: list, fn) -> None:
        """``fn(idx)`` -> scores [n_resamples, len(items)] for window indices idx [n_resamples, W]."""
        self.tests[name] = (level, list(items), fn)

    def ratio(self, name, level, items, num: np.ndarray, den: np.ndarray) -> None:
        if num.shape[1] != self.n_windows:
            raise SwapKLError(f"test {name} was measured on {num.shape[1]} windows, not {self.n_windows}")
        self.add(name, level, items, lambda idx: num[:, idx].sum(-1).T / den[:, idx].sum(-1).T)


def _directed(rows: pd.DataFrame, protocol: str) -> dict[tuple[int, int], int]:
    sel = rows[rows["protocol"] == protocol]
    return {(int(r.layer_i), int(r.layer_j)): k for k, r in zip(sel.index, sel.itertuples(index=False))}


def add_pair_tests(scores: Scores, rows: pd.DataFrame, prefix: str, suffix: str = "", *, num="seq_kl_sum",
                   den="seq_tokens") -> None:
    """replacement_max / replacement_fwd / interchange (``prefix`` = "" or "healed_") from per-window sums."""
    rows = rows.reset_index(drop=True)
    num_all, den_all = _sums(rows, num, den) if len(rows) else (None, None)
    rep = _directed(rows, prefix + "replacement")
    pairs = sorted({(min(i, j), max(i, j)) for i, j in rep if (j, i) in rep})
    if pairs:
        a = [rep[p] for p in pairs]
        b = [rep[(j, i)] for i, j in pairs]
        f = lambda idx, a=a, b=b: np.maximum(*(num_all[k][:, idx].sum(-1).T / den_all[k][:, idx].sum(-1).T  # noqa: E731
                                                 for k in (a, b)))
        scores.add(f"{prefix}replacement_max{suffix}", "pair", pairs, f)
        if not prefix:
            scores.ratio(f"replacement_fwd{suffix}", "pair", pairs, num_all[a], den_all[a])
    inter = _directed(rows, prefix + "interchange")
    if inter:
        keys = sorted(inter)
        scores.ratio(f"{prefix}interchange{suffix}", "pair", keys, num_all[[inter[p] for p in keys]],
                     den_all[[inter[p] for p in keys]])
    dele = rows[rows["protocol"] == prefix + "deletion"]
    if len(dele):
        n, d = _sums(dele, num, den)
        scores.ratio(f"{prefix}deletion{suffix}", "block", [int(x) for x in dele["layer_i"]], n, d)


def add_block_minimum(scores: Scores, test: str, n_layers: int) -> None:
    """The block score ``s(i) = min_j d(i, j)`` of a pair test, as pruning ranks layers."""
    level, pairs, fn = scores.tests[test]
    members = [[k for k, (a, b) in enumerate(pairs) if i in (a, b)] for i in range(n_layers)]
    blocks = [i for i in range(n_layers) if members[i]]

    def f(idx):
        s = fn(idx)
        return np.stack([s[:, members[i]].min(axis=1) for i in blocks], axis=1)

    scores.add(f"{test}_block", "block", blocks, f)


def agreement_table(scores: Scores, meta: dict, *, n_boot: int, seed: int) -> pd.DataFrame:
    """One row per two tests of a level (in the order they were added)."""
    point = np.arange(scores.n_windows)[None, :]
    idx = resample_indices(scores.n_windows, n_boot, seed)
    cache = {name: (level, items, fn(point)[0], fn(idx)) for name, (level, items, fn) in scores.tests.items()}
    rows = []
    names = list(cache)
    for a_pos, a in enumerate(names):
        for b in names[a_pos + 1:]:
            la, ia, pa_, ba = cache[a]
            lb, ib, pb, bb = cache[b]
            if la != lb:
                continue
            common = [x for x in ia if x in set(ib)]
            ka = [ia.index(x) for x in common]
            kb = [ib.index(x) for x in common]
            c = compare(pa_[ka], pb[kb])
            few = c["n_compared"] < MIN_ITEMS
            xa, xb = ba[:, ka], bb[:, kb]
            ok = np.isfinite(xa).all(1) & np.isfinite(xb).all(1)
            rho = spearman(xa[ok], xb[ok]) if not few else np.array([])
            tau = kendall(xa[ok], xb[ok]) if not few else np.array([])
            (rl, rh), (tl, th) = percentile_ci(rho), percentile_ci(tau)
            rows.append(dict(meta, level=la, test_a=a, test_b=b, n_items=c["n_compared"], spearman=c["spearman"],
                             spearman_ci_low=rl, spearman_ci_high=rh, kendall=c["kendall"], kendall_ci_low=tl,
                             kendall_ci_high=th, n_boot=int(n_boot), too_few_items=bool(few)))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _read(path: str, schema, what: str, tokens_sha: str | None):

    df = read_frame(path, schema, what)
    prov = provenance.read(path)
    provenance.require_recorded(path, prov, ["tokens_sha256"], f"{what} file")
    sha = prov["tokens_sha256"]
    if tokens_sha is not None and sha != tokens_sha:
        raise SwapKLError(f"{path!r} was measured on other probe windows than the checkpoint's probe tables")
    return df, sha


def build_scores(probe_files: list[str], repr_file: str | None, healed_file: str | None, *,
                 relevance_file: str | None = None, members: dict[str, list[str]] | None = None) -> tuple[Scores, dict]:
    """Every test of one checkpoint (see the module docstring) and the checkpoint's identity."""

    probe, sha = None, None
    for p in probe_files:
        df, sha = _read(p, PROBE_SCHEMA, "probe", sha)
        probe = df if probe is None else pd.concat([probe, df], ignore_index=True)
    probe = probe[probe["protocol"] != "base"].reset_index(drop=True)
    n_layers = int(probe["n_layers"].iloc[0])
    scores = Scores(len(probe["seq_tokens"].iloc[0]))
    add_pair_tests(scores, probe, "")
    if healed_file is not None:
        healed, _ = _read(healed_file, ["protocol", "layer_i", "layer_j", "final", "seq_kl_sum", "seq_tokens"],
                          "healed", sha)
        add_pair_tests(scores, healed[healed["final"].astype(bool)], "healed_")
    if repr_file is not None:
        rep, _ = _read(repr_file, REPR_SCHEMA, "representation", sha)
        for metric in ("bi", "angular"):
            rows = rep[(rep["metric"] == metric) & (rep["width"] == 1)].sort_values("layer_i")
            n, d = _sums(rows, "seq_value_sum", "seq_count")
            scores.ratio(metric, "block", [int(x) for x in rows["layer_i"]], n, d)
    if relevance_file is not None:
        rel = read_relevance(relevance_file).groupby("layer")["relevance"].mean()
        values = rel.to_numpy(dtype=np.float64)
        scores.add("accrel", "block", [int(x) for x in rel.index], lambda idx, v=values: np.tile(v, (len(idx), 1)))
    for member, files in (members or {}).items():
        mp = pd.concat([_read(p, PROBE_SCHEMA, "probe", sha)[0] for p in files], ignore_index=True)
        add_pair_tests(scores, mp[mp["protocol"] != "base"], "", f"@{member}")
    for test in ("replacement_max", "interchange"):
        if test in scores.tests:
            add_block_minimum(scores, test, n_layers)
    meta = dict(model=str(probe["model"].iloc[0]), revision=str(probe["revision"].iloc[0]))
    return scores, meta


def run_test_agreement(job: DisagreementJob) -> pd.DataFrame:
    """Write the disagreement table of one checkpoint to ``out``: a :class:`DisagreementJob`
    (``run_test_agreement(job)``)."""
    job = DisagreementJob.checked(job)
    probe_files, out, repr_file, healed_file = list(job.probe_files), job.out, job.repr_file, job.healed_file
    relevance_file, members, n_boot, seed = job.relevance_file, job.members, job.n_boot, job.seed
    model, revision = job.model, job.revision
    require_int("n_boot (bootstrap resamples)", n_boot, 1)
    check_writable(out)
    scores, meta = build_scores(probe_files, repr_file, healed_file, relevance_file=relevance_file, members=members)
    meta = dict(meta, **{k: v for k, v in dict(model=model, revision=revision).items() if v is not None})
    df = agreement_table(scores, meta, n_boot=n_boot, seed=seed)
    inputs = [p for p in [*probe_files, repr_file, healed_file, relevance_file] if p is not None]
    inputs += [p for files in (members or {}).values() for p in files]
    write_parquet(df, out, dict(provenance.software_versions(), inputs=inputs, n_boot=int(n_boot), seed=int(seed),
                                ci_level=0.95, tests={k: v[0] for k, v in scores.tests.items()}))
    return df
