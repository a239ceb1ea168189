"""Synthetic probe and representation Parquets in the exact schema the engine writes.

Values are chosen by the test: a variant's ``kl_mean`` is exactly the value asked for, and its
per-sequence sums are random but rescaled so that ``sum(seq_kl_sum) / sum(seq_tokens)`` equals
it (up to rounding). Every probe file carries a base row, as the engine's files do.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl.tables.schemas import PROBE_SCHEMA, REPR_SCHEMA  # the engine's own output schema, one definition


def step_of(revision: str) -> int | None:
    return int(revision[4:]) if revision.startswith("step") and revision[4:].isdigit() else None


def provenance(model: str, revision: str, weights_sha256: str | None = None) -> dict:
    sha = weights_sha256 if weights_sha256 is not None else hashlib.sha256(
        f"{model}@{revision}".encode()).hexdigest()
    return {"model_id": f"test/{model}", "revision": revision, "commit": "0" * 40,
            "weights_sha256": sha, "model_config_sha256": "m" * 64, "tokens_sha256": "t" * 64, "seed": 0,
            "dtype": "float32", "device": "cpu", "swapkl_version": "test", "config_hash": "c" * 16}


def write_table(path: Path, rows: list[dict], schema: pa.Schema, prov: dict | None) -> Path:
    table = pa.Table.from_pylist(rows, schema=schema)
    if prov is not None:
        table = table.replace_schema_metadata({b"swapkl": json.dumps(prov, sort_keys=True).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


class Sequences:
    """Per-sequence token counts shared by all variants of a checkpoint."""

    def __init__(self, n_seqs: int, seed: int, constant: bool = False):
        self.rng = np.random.default_rng(seed)
        self.constant = constant
        self.tokens = (np.full(n_seqs, 10) if constant else self.rng.integers(5, 20, n_seqs)).astype(np.int64)

    def sums(self, mean: float) -> list[float]:
        """Per-sequence sums whose token-weighted mean is ``mean``."""
        t = self.tokens.astype(np.float64)
        if self.constant or mean == 0:
            return (mean * t).tolist()
        w = self.rng.uniform(0.2, 1.8, len(t))
        w *= t.sum() / (t * w).sum()
        return (mean * t * w).tolist()


def variant_row(seqs: Sequences, meta: dict, protocol: str, i, j, kl: float, nll: float = 3.0) -> dict:
    tok = seqs.tokens
    return dict(meta, protocol=protocol, layer_i=i, layer_j=j, kl_mean=float(kl), nll_mean=nll,
                n_seqs=len(tok), n_tokens=int(tok.sum()), seq_kl_sum=seqs.sums(kl),
                seq_tokens=tok.tolist(), seq_nll_sum=(nll * tok).tolist(), seq_nll_tokens=tok.tolist())


def repr_row(seqs: Sequences, meta: dict, metric: str, i: int, width: int, value: float) -> dict:
    tok = seqs.tokens
    return dict(meta, metric=metric, layer_i=i, width=width, value=value, n_seqs=len(tok), n_tokens=int(tok.sum()),
                seq_value_sum=seqs.sums(value), seq_count=tok.tolist())


def write_checkpoint(folder: Path, *, model: str = "toy", revision: str = "step1000", n_layers: int = 4,
                     repl: dict[tuple[int, int], float] | None = None,
                     inter: dict[tuple[int, int], float] | None = None,
                     deletion: list[float] | None = None, bi: list[float] | None = None,
                     n_seqs: int = 12, seed: int = 0, weights_sha256: str | None = None,
                     constant_seqs: bool = False, split: bool = True) -> dict[str, Path]:
    """Write a checkpoint's probe files (``replacement``, ``interchange``, ``deletion`` -- one file
    each when ``split``, else one ``probe`` file) and a ``repr`` file when ``bi`` is given.

    ``repl[(i, j)]`` is r(i<-j); ``inter[(i, j)]`` with i < j. Returns {role: path}.
    """
    seqs = Sequences(n_seqs, seed, constant_seqs)
    meta = dict(model=model, revision=revision, step=step_of(revision), n_layers=n_layers)
    prov = provenance(model, revision, weights_sha256)
    base = variant_row(seqs, meta, "base", None, None, 0.0, nll=2.5)
    groups = {
        "replacement": [variant_row(seqs, meta, "replacement", i, j, v, 3.0 + v)
                        for (i, j), v in sorted((repl or {}).items())],
        "interchange": [variant_row(seqs, meta, "interchange", i, j, v, 3.0 + v)
                        for (i, j), v in sorted((inter or {}).items())],
        "deletion": [variant_row(seqs, meta, "deletion", i, None, v, 3.0 + v)
                     for i, v in enumerate(deletion or [])],
    }
    stem = f"{model}_{revision}"
    out: dict[str, Path] = {}
    if split:
        for role, rows in groups.items():
            if rows:
                out[role] = write_table(folder / f"{stem}_{role}.parquet", [base, *rows], PROBE_SCHEMA, prov)
    else:
        rows = [r for g in groups.values() for r in g]
        out["probe"] = write_table(folder / f"{stem}_probe.parquet", [base, *rows], PROBE_SCHEMA, prov)
    if bi is not None:
        rows = [repr_row(seqs, meta, "bi", i, 1, float(v)) for i, v in enumerate(bi)]
        rows += [repr_row(seqs, meta, "angular", l, n, 0.1 * n) for n in (1, 2) for l in range(n_layers - n + 1)]
        out["repr"] = write_table(folder / f"{stem}_repr.parquet", rows, REPR_SCHEMA, prov)
    return out


def random_values(n_layers: int, seed: int, pairs: list[tuple[int, int]] | None = None,
                  scale: float = 0.2) -> tuple[dict, dict, list[float]]:
    """Random replacement (both directions), interchange and deletion KLs for ``pairs`` (default: all)."""
    rng = np.random.default_rng(seed)
    if pairs is None:
        pairs = [(i, j) for i in range(n_layers) for j in range(i + 1, n_layers)]
    repl, inter = {}, {}
    for i, j in pairs:
        a, b = rng.uniform(0.01, 1.0, 2) * scale * (1 + (j - i))
        repl[(i, j)], repl[(j, i)] = float(a), float(b)
        inter[(i, j)] = float(max(a, b) * rng.uniform(0.2, 1.1))
    deletion = [float(v) for v in rng.uniform(0.05, 2.0, n_layers)]
    return repl, inter, deletion


def probe_files(paths: dict[str, Path]) -> list[Path]:
    return [p for role, p in paths.items() if role != "repr"]


def rewrite(path: Path, change) -> Path:
    """Apply ``change(table) -> table`` to a Parquet file, keeping its metadata unless replaced."""
    table = pq.read_table(path)
    meta = table.schema.metadata
    new = change(table)
    if new.schema.metadata is None and meta is not None:
        new = new.replace_schema_metadata(meta)
    pq.write_table(new, path)
    return path
