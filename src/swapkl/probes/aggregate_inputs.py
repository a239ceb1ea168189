"""Reading and validating the inputs of ``swapkl aggregate``: probe and representation Parquets.

A *probe file* holds one checkpoint's measurements for one rule, one row per variant (the
schema is :data:`swapkl.tables.schemas.PROBE_SCHEMA`); a *representation file* holds the ShortGPT BI
and angular distances of one checkpoint (:data:`swapkl.tables.schemas.REPR_SCHEMA`). Both carry their
provenance as JSON under the Parquet key-value metadata key ``b"swapkl"``, and the per-sequence
sums from which the aggregate computes their confidence intervals.

Every problem found here raises :class:`~swapkl.errors.SwapKLError` with a one-line message
that starts with the offending file's path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.model.kl_average import per_prompt_means
from swapkl.probes.protocols import get_protocol, head_protocol_names, protocol_names
from swapkl.tables.schemas import PROBE_SCHEMA, REPR_SCHEMA, SEQ_COLUMNS, read_table

REPR_METRICS = ("bi", "angular", "angular_last")


# kl_mean must equal sum(seq_kl_sum) / sum(seq_tokens) up to this tolerance (abs + rel * |kl|)
_KL_ATOL = 1e-6
_KL_RTOL = 1e-4


@dataclass
class ProbeInput:
    """One validated probe file. ``seq_kl``/``seq_tokens`` and ``seq_nll``/``seq_nll_tokens`` are
    ``[n_rows, n_seqs]`` arrays of the per-sequence sums aligned with ``rows``."""

    path: str
    model: str
    revision: str
    step: int | None
    n_layers: int
    n_seqs: int
    provenance: dict
    rows: pd.DataFrame
    seq_kl: np.ndarray
    seq_tokens: np.ndarray
    seq_nll: np.ndarray
    seq_nll_tokens: np.ndarray


@dataclass
class ReprInput:
    """One validated representation file; ``seq_sum``/``seq_count`` are ``[n_rows, n_seqs]`` arrays of
    the per-sequence sums aligned with ``rows``."""

    path: str
    model: str
    revision: str
    step: int | None
    n_layers: int
    provenance: dict
    rows: pd.DataFrame = field(repr=False)
    seq_sum: np.ndarray = field(repr=False)
    seq_count: np.ndarray = field(repr=False)


def _single(path: str, df: pd.DataFrame, col: str):
    vals = df[col].drop_duplicates()
    if col != "step" and df[col].isna().any():
        raise SwapKLError(f"{path}: column {col} has missing values")
    if len(vals) != 1:
        shown = ", ".join(str(v) for v in list(vals)[:4])
        if col == "n_layers":
            raise SwapKLError(f"{path}: mixed n_layers within one checkpoint ({shown})")
        raise SwapKLError(f"{path}: expected one {col} per file, found {len(vals)} ({shown})")
    v = vals.iloc[0]
    return None if pd.isna(v) else v


def _checkpoint_identity(path: str, df: pd.DataFrame) -> tuple[str, str, int | None, int]:
    model = str(_single(path, df, "model"))
    revision = str(_single(path, df, "revision"))
    step = _single(path, df, "step")
    n_layers = int(_single(path, df, "n_layers"))
    if n_layers < 1:
        raise SwapKLError(f"{path}: n_layers must be >= 1, got {n_layers}")
    return model, revision, (None if step is None else int(step)), n_layers


def _int_frame(table: pa.Table, names) -> pd.DataFrame:
    return table.select(list(names)).to_pandas(
        types_mapper={pa.int64(): pd.Int64Dtype(), pa.string(): pd.StringDtype()}.get)


def _seq_matrix(path: str, table: pa.Table, name: str, n_rows: int, n_seqs: np.ndarray) -> np.ndarray:
    """``[n_rows, max_n]`` float64 matrix of a list column; checks list lengths against n_seqs."""
    col = table.column(name).combine_chunks()
    if col.null_count:
        bad = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise SwapKLError(f"{path}: row {bad}: {name} is null")
    lengths = col.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
    ok = lengths == n_seqs
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise SwapKLError(
            f"{path}: row {bad}: {name} has {lengths[bad]} entries but n_seqs is {n_seqs[bad]}")
    width = int(n_seqs.max()) if n_rows else 0
    out = np.zeros((n_rows, width), dtype=np.float64)
    flat = col.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for r in range(n_rows):
        if lengths[r]:
            out[r, : lengths[r]] = flat[starts[r]: starts[r] + lengths[r]]
    return out


def _check_labels(path: str, df: pd.DataFrame, column: str, allowed, required) -> None:
    """Every row's ``column`` is one of ``allowed`` and no ``required`` column has a missing value."""
    bad = sorted(set(df[column].dropna()) - set(allowed))
    if df[column].isna().any() or bad:
        raise SwapKLError(f"{path}: unknown {column} {bad[0] if bad else None!r}; "
                          f"expected one of {', '.join(allowed)}")
    for c in required:
        if df[c].isna().any():
            raise SwapKLError(f"{path}: column {c} has missing values")


def _check_row(where: str, name: str, i: int | None, j: int | None, head, n_layers: int) -> None:
    """The identity columns of one probe row as its protocol (:mod:`swapkl.probes.protocols`) fills them."""
    protocol = None if name == "base" else get_protocol(name)
    if protocol is not None and i is None:
        raise SwapKLError(f"{where}: layer_i is missing")
    if protocol is not None and protocol.two_blocks and j is None:
        raise SwapKLError(f"{where}: layer_j is missing")
    for v in (i, j):
        if v is not None and not 0 <= v < n_layers:
            raise SwapKLError(f"{where}: layer index {v} out of range 0..{n_layers - 1}")
    heads = protocol is not None and protocol.heads
    if protocol is not None and protocol.pairs == "unordered" and not heads and not i < j:
        raise SwapKLError(f"{where}: {name} rows need layer_i < layer_j")
    if protocol is not None and protocol.pairs == "directed" and i == j:
        raise SwapKLError(f"{where}: {name} needs layer_i != layer_j")
    if heads != (not pd.isna(head)):
        raise SwapKLError(f"{where}: head is set exactly on {' and '.join(head_protocol_names())} rows")
    if heads and not (i < j and int(head) >= 0):
        raise SwapKLError(f"{where}: {name} rows need layer_i < layer_j and head >= 0")


def read_probe_file(path: str | Path) -> ProbeInput:
    """Read and validate one probe Parquet (schema: :data:`swapkl.tables.schemas.PROBE_SCHEMA`)."""
    path = str(path)
    table, prov = read_table(path, PROBE_SCHEMA, "probe", nonempty=True)
    return probe_input(table, prov, path)


def probe_input(table: pa.Table, prov: dict, path: str) -> ProbeInput:
    """Validate one probe table of :data:`~swapkl.tables.schemas.PROBE_SCHEMA` and its provenance (read from a
    file, or in memory); ``path`` names it in every error."""
    scalar = [c for c in PROBE_SCHEMA.names if c not in SEQ_COLUMNS]
    df = _int_frame(table, scalar)
    model, revision, step, n_layers = _checkpoint_identity(path, df)

    _check_labels(path, df, "protocol", ("base", *protocol_names()), required=("n_seqs", "n_tokens", "kl_mean"))
    if not np.isfinite(df["kl_mean"].to_numpy(dtype=np.float64)).all():
        row = int(np.flatnonzero(~np.isfinite(df["kl_mean"].to_numpy(dtype=np.float64)))[0])
        raise SwapKLError(f"{path}: row {row}: kl_mean is not finite")
    n_seqs_col = df["n_seqs"].to_numpy(dtype=np.int64)
    if (n_seqs_col < 1).any():
        raise SwapKLError(f"{path}: n_seqs must be >= 1")
    if len(set(n_seqs_col.tolist())) != 1:
        raise SwapKLError(f"{path}: rows disagree on n_seqs ({sorted(set(n_seqs_col.tolist()))}); "
                          "all variants of a checkpoint must be measured on the same sequences")
    n_seqs = int(n_seqs_col[0])

    proto = df["protocol"].to_numpy(dtype=object)
    li, lj, head = df["layer_i"], df["layer_j"], df["head"]
    for r in range(len(df)):
        i = None if pd.isna(li.iloc[r]) else int(li.iloc[r])
        j = None if pd.isna(lj.iloc[r]) else int(lj.iloc[r])
        _check_row(f"{path}: row {r} ({proto[r]} {i},{j})", proto[r], i, j, head.iloc[r], n_layers)
    key = pd.DataFrame({"p": proto, "i": li.astype("Int64"), "j": lj.astype("Int64"), "h": head.astype("Int64")})
    dup = key.duplicated()
    if dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise SwapKLError(f"{path}: row {r}: variant {proto[r]} {li.iloc[r]},{lj.iloc[r]} appears twice")

    seq_kl, seq_tok, seq_nll, seq_nll_tok = (_seq_matrix(path, table, name, len(df), n_seqs_col)
                                             for name in SEQ_COLUMNS)

    # The per-sequence lists must describe the reported means (they feed the bootstrap).
    tok = seq_tok.sum(axis=1)
    bad = (tok <= 0) | (seq_tok < 0).any(axis=1)
    if bad.any():
        raise SwapKLError(f"{path}: row {int(np.flatnonzero(bad)[0])}: seq_tokens must be >= 0 with a positive sum")
    n_tok = df["n_tokens"].to_numpy(dtype=np.int64)
    if (tok != n_tok).any():
        r = int(np.flatnonzero(tok != n_tok)[0])
        raise SwapKLError(f"{path}: row {r}: sum(seq_tokens)={int(tok[r])} differs from n_tokens={int(n_tok[r])}")
    if (prov.get("kl_options") or {}).get("average") == "prompts":
        # each prompt's mean KL with weight 1: every statistic below (means, bootstrap) averages over prompts
        seq_kl, seq_tok = per_prompt_means(seq_kl, seq_tok)
        tok = seq_tok.sum(axis=1)
    kl_seq = seq_kl.sum(axis=1) / tok
    kl = df["kl_mean"].to_numpy(dtype=np.float64)
    off = np.abs(kl_seq - kl) > _KL_ATOL + _KL_RTOL * np.abs(kl)
    if off.any():
        r = int(np.flatnonzero(off)[0])
        raise SwapKLError(f"{path}: row {r}: kl_mean={kl[r]:.6g} but sum(seq_kl_sum)/sum(seq_tokens)={kl_seq[r]:.6g}")
    return ProbeInput(path, model, revision, step, n_layers, n_seqs, prov, df, seq_kl, seq_tok, seq_nll, seq_nll_tok)


def read_repr_file(path: str | Path) -> ReprInput:
    """Read and validate one representation Parquet (schema: :data:`swapkl.tables.schemas.REPR_SCHEMA`)."""
    path = str(path)
    table, prov = read_table(path, REPR_SCHEMA, "representation", nonempty=True)
    return repr_input(table, prov, path)


def repr_input(table: pa.Table, prov: dict, path: str) -> ReprInput:
    """Validate one representation table of :data:`~swapkl.tables.schemas.REPR_SCHEMA` and its provenance;
    ``path`` names it in every error."""
    df = _int_frame(table, [c for c in REPR_SCHEMA.names if not c.startswith("seq_")])
    model, revision, step, n_layers = _checkpoint_identity(path, df)
    _check_labels(path, df, "metric", REPR_METRICS, required=("layer_i", "width", "value"))
    li = df["layer_i"].to_numpy(dtype=np.int64)
    w = df["width"].to_numpy(dtype=np.int64)
    out = (li < 0) | (w < 1) | (li + w > n_layers)
    if out.any():
        r = int(np.flatnonzero(out)[0])
        raise SwapKLError(f"{path}: row {r}: blocks {li[r]}..{li[r] + w[r] - 1} out of range "
                          f"0..{n_layers - 1}")
    dup = df[["metric", "layer_i", "width"]].duplicated()
    if dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise SwapKLError(f"{path}: row {r}: {df['metric'].iloc[r]} {li[r]} width {w[r]} appears twice")
    n_seqs = df["n_seqs"].to_numpy(dtype=np.int64)
    if len(set(n_seqs.tolist())) != 1:
        raise SwapKLError(f"{path}: rows disagree on n_seqs ({sorted(set(n_seqs.tolist()))}); "
                          "all rows of a checkpoint must be measured on the same sequences")
    seq_sum, seq_count = (_seq_matrix(path, table, name, len(df), n_seqs) for name in ("seq_value_sum", "seq_count"))
    return ReprInput(path, model, revision, step, n_layers, prov, df, seq_sum, seq_count)
