"""Atomic Parquet writing with provenance metadata, byte-identical for identical inputs."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from contextlib import ExitStack

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl.tables.atomic import replaced_on_success
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import replaceable
from swapkl.tables.provenance import METADATA_KEY, table_versions


def write_parquet(df: pd.DataFrame | pa.Table, path: str, provenance: dict) -> None:
    """Write ``df`` to ``path`` via a temporary file and a rename; never leaves a partial file.

    The file's provenance is ``provenance`` on top of :func:`swapkl.tables.provenance.table_versions` (swapkl's
    version and source hash are in every file).

    An existing file at ``path`` is only replaced when swapkl wrote it (see :func:`written_by_swapkl`).
    """
    write_parquets([(df, path, provenance)])


def write_parquets(items) -> None:
    """Write several (table, path, provenance) files as one: all of them are renamed into place only once
    every one is written, so a failure (disk full...) leaves none of them behind."""
    staged = []
    for df, path, provenance in items:
        replaceable(path, "output", written_by_swapkl)
        table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta.pop(b"pandas", None)  # pandas metadata is not needed and varies with pandas versions
        provenance = table_versions() | dict(provenance)  # every file names the code that wrote it
        meta[METADATA_KEY] = json.dumps(provenance, sort_keys=True, default=str).encode()
        staged.append((table.replace_schema_metadata(meta), path))
        check_writable(path)  # names the folder when it cannot take a file at all
    path = staged[0][1] if staged else None
    try:
        with ExitStack() as stack:
            for table, path in staged:
                pq.write_table(table, stack.enter_context(replaced_on_success(path)), compression="zstd")
    except OSError as e:
        raise SwapKLError(f"cannot write {path!r}: {os_reason(e)}") from e


def check_writable(path: str) -> None:
    """Fail early, before hours of computation, when ``path`` cannot be written.

    Creates the folder if needed and a temporary file in it (removed again); ``path`` itself is
    not touched, and must be absent or a Parquet file that swapkl wrote. Raises SwapKLError naming
    the folder or file and the reason.
    """
    if os.path.isdir(path):
        raise SwapKLError(f"cannot write {path!r}: it is a directory")
    replaceable(path, "output", written_by_swapkl)
    _unlink(_temp_file(path))


def written_by_swapkl(path: str) -> bool:
    """Whether ``path`` is a Parquet file carrying swapkl's provenance metadata."""
    try:
        return METADATA_KEY in (pq.read_schema(path).metadata or {})
    except Exception:  # not Parquet at all
        return False


def os_reason(e: OSError) -> str:
    """A short human reason for an OSError (``disk full`` for ENOSPC/EDQUOT)."""
    if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "disk full"
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a path component is a file, not a folder"
    return (e.strerror or str(e)).lower()


def _temp_file(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=folder)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; results are shared like any new file
    except OSError as e:
        if tmp is not None:
            _unlink(tmp)
        raise SwapKLError(f"cannot write to folder {folder!r}: {os_reason(e)}") from e
    return tmp


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
