"""Atomic Parquet writing with provenance metadata, byte-identical for identical inputs."""

from __future__ import annotations

import errno
import json
import os
import tempfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl.errors import SwapKLError
from swapkl.provenance import METADATA_KEY


def write_parquet(df: pd.DataFrame | pa.Table, path: str, provenance: dict) -> None:
    """Write ``df`` to ``path`` via a temporary file and a rename; never leaves a partial file."""
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta.pop(b"pandas", None)  # pandas metadata is not needed and varies with pandas versions
    meta[METADATA_KEY] = json.dumps(provenance, sort_keys=True, default=str).encode()
    table = table.replace_schema_metadata(meta)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=folder)
        os.close(fd)
    except OSError as e:
        raise SwapKLError(f"cannot write to {folder!r}: {e.strerror}") from e
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except OSError as e:
        _unlink(tmp)
        what = "disk full" if e.errno == errno.ENOSPC else e.strerror
        raise SwapKLError(f"cannot write {path!r}: {what}") from e
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
