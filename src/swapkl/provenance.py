"""Provenance recorded in every Parquet file swapkl writes (key ``swapkl`` of the file metadata)."""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import pyarrow.parquet as pq

from swapkl.errors import SwapKLError

METADATA_KEY = b"swapkl"


def software_versions() -> dict:
    import torch
    import transformers

    from swapkl import __version__

    return {
        "swapkl_version": __version__,
        "swapkl_source_sha256": source_sha256(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def source_sha256() -> str:
    """sha256 over the swapkl package's Python sources (relative paths and contents, sorted).

    The version number does not change with every edit of a development install; this does,
    so results (and resumable progress) from different code are never mixed up.
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def build(loaded=None, windows=None, **extra) -> dict:
    """A provenance dict from a loaded model, token windows and extra fields (seed, config_hash...)."""
    out = software_versions()
    if loaded is not None:
        out.update(
            model_id=loaded.model_id,
            revision=loaded.revision,
            commit=loaded.commit,
            weights_sha256=loaded.weights_sha256,
            dtype=loaded.dtype,
            device=loaded.device,
            allow_pickle=loaded.allow_pickle,
            trust_remote_code=loaded.trust_remote_code,
        )
    if windows is not None:
        out.update(data_source=windows.source, tokens_sha256=windows.sha256,
                   n_seqs=int(windows.input_ids.shape[0]), seq_len=int(windows.input_ids.shape[1]),
                   bos_prepended=getattr(windows, "bos_token_id", None) is not None,
                   bos_token_id=getattr(windows, "bos_token_id", None))
    out.update(extra)
    return out


def read(path: str) -> dict:
    try:
        meta = pq.read_schema(path).metadata or {}
    except Exception as e:
        raise SwapKLError(f"{path!r} is not a readable Parquet file: {e}") from e
    if METADATA_KEY not in meta:
        raise SwapKLError(f"{path!r} carries no swapkl provenance")
    return json.loads(meta[METADATA_KEY])


def format_text(prov: dict) -> str:
    width = max((len(k) for k in prov), default=0)
    lines = []
    for k in sorted(prov):
        v = prov[k]
        if isinstance(v, (dict, list)):
            v = json.dumps(v, sort_keys=True)
        lines.append(f"{k:<{width}}  {v}")
    return "\n".join(lines)
