"""The protocol gap of each pair split over the block's sublayers, with intervals over windows.

For a pair (i, j) and a part (the whole block, its attention sublayer or its MLP sublayer), the part's gap is
``d_repl - d_inter``: ``d_repl`` the larger of the two replacement KLs (slot i running j's part, and j running
i's), ``d_inter`` the KL of exchanging the part between the two blocks, each a token-weighted mean over the
windows. The interaction is ``gap_block - gap_attention - gap_mlp``: zero where the two sublayers' gaps add up
to the block's. Over all the study's pairs, the mean gap of each part, the mean interaction, each sublayer's share
of the block's mean gap (mean sublayer gap / mean block gap) and the MLP's mean gap minus the attention's say which
sublayer carries more of the gap. Every quantity carries a 95% percentile bootstrap interval from one resampling of
the windows, shared by all of them (so the intervals are paired). The deletion of each block's attention and MLP
is measured too, with its cost per parameter removed.

:func:`decomposition` computes the table from per-window sums (numpy only, so the gathering rule runs without
torch); :mod:`swapkl.studies.sublayers.run` measures them on a model and writes the table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from swapkl.probes.pairs import pairs_for
from swapkl.probes.protocols import build_variants
from swapkl.stats.bootstrap import percentile_ci, ratio_mean, ratio_resamples, resample_indices
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import read_concatenated

#: the protocols measured, by part: (replacement, interchange); and the deletions
PARTS = {"block": ("replacement", "interchange"), "attention": ("attention_replacement", "attention_interchange"),
         "mlp": ("mlp_replacement", "mlp_interchange")}
DELETIONS = {"attention": "attention_deletion", "mlp": "mlp_deletion", "block": "deletion"}

SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("kind", pa.string()), ("part", pa.string()), ("layer_i", pa.int64()), ("layer_j", pa.int64()),
    ("d_repl", pa.float64()), ("d_inter", pa.float64()),
    ("value", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("params", pa.int64()), ("n_windows", pa.int64()), ("n_tokens", pa.int64()),
])
KEY = ["model", "revision", "kind", "part", "layer_i", "layer_j"]


def sublayer_variants(pairs: str, n_layers: int) -> list:
    """Every variant the decomposition needs: the block and sublayer replacements and interchanges of the pairs,
    and every block's deletion and sublayer deletions."""
    protocols = [p for part in PARTS.values() for p in part] + list(DELETIONS.values())
    return build_variants(protocols, pairs, n_layers)


def _boot(sums: np.ndarray, tokens: np.ndarray, idx: np.ndarray) -> tuple[float, np.ndarray]:
    """The token-weighted mean and its value under each resampling."""
    return ratio_mean(sums, tokens), ratio_resamples(sums, tokens, idx)


def decomposition(sums: dict[str, np.ndarray], tokens: np.ndarray, pairs: str, n_layers: int, *,
                  params: dict[str, int], n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """The rows of :data:`SCHEMA` (without the model's labels): per pair, the gap of each part and the
    interaction; per block, each deletion's KL and its KL per million parameters removed (``params``: the
    parameters of each part of a block)."""
    idx = resample_indices(len(tokens), n_boot, seed)
    n_windows, n_tokens = len(tokens), int(tokens.sum())
    rows = []

    def row(kind, part, i, j, value, boots, d_repl=float("nan"), d_inter=float("nan"), n_params=0):
        low, high = percentile_ci(boots)
        rows.append(dict(kind=kind, part=part, layer_i=i, layer_j=j, d_repl=d_repl, d_inter=d_inter, value=value,
                         ci_low=low, ci_high=high, params=n_params, n_windows=n_windows, n_tokens=n_tokens))

    per_pair: dict[str, list] = {part: [] for part in PARTS}
    for i, j in pairs_for(pairs, n_layers):
        gaps = {}
        for part, (repl, inter) in PARTS.items():
            (r_ij, b_ij), (r_ji, b_ji) = (_boot(sums[f"{repl}:{a}:{b}"], tokens, idx) for a, b in ((i, j), (j, i)))
            d_inter, b_inter = _boot(sums[f"{inter}:{i}:{j}"], tokens, idx)
            gaps[part] = (max(r_ij, r_ji) - d_inter, np.maximum(b_ij, b_ji) - b_inter)
            row("gap", part, i, j, gaps[part][0], gaps[part][1], max(r_ij, r_ji), d_inter)
        row("interaction", "block", i, j, gaps["block"][0] - gaps["attention"][0] - gaps["mlp"][0],
            gaps["block"][1] - gaps["attention"][1] - gaps["mlp"][1])
        for part in PARTS:
            per_pair[part].append(gaps[part])
    mean = {part: (float(np.mean([g for g, _ in v])), np.mean([b for _, b in v], axis=0))
            for part, v in per_pair.items()}
    for part in PARTS:
        row("mean_gap", part, None, None, *mean[part])
    row("mean_interaction", "block", None, None, mean["block"][0] - mean["attention"][0] - mean["mlp"][0],
        mean["block"][1] - mean["attention"][1] - mean["mlp"][1])
    for part in ("attention", "mlp"):
        with np.errstate(divide="ignore", invalid="ignore"):
            row("share", part, None, None, mean[part][0] / mean["block"][0], mean[part][1] / mean["block"][1])
    row("mlp_minus_attention", "mlp", None, None, mean["mlp"][0] - mean["attention"][0],
        mean["mlp"][1] - mean["attention"][1])
    for i in range(n_layers):
        for part, protocol in DELETIONS.items():
            kl, boots = _boot(sums[f"{protocol}:{i}:"], tokens, idx)
            row("deletion", part, i, None, kl, boots, n_params=params[part])
            row("deletion_per_mparam", part, i, None, kl / params[part] * 1e6, boots / params[part] * 1e6,
                n_params=params[part])
    return rows


def aggregate_sublayers(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint decomposition tables into one (provenance: each input's)."""
    check_writable(out)
    table, prov = read_concatenated(inputs, SCHEMA, "sublayer gaps", KEY)
    write_parquet(table, out, prov)
