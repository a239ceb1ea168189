"""Provenance recorded in every Parquet file swapkl writes (key ``swapkl`` of the file metadata)."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import platform
import sys
from pathlib import Path

import pandas
import pyarrow
import pyarrow.parquet as pq

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_regular_file
from swapkl import __version__

METADATA_KEY = b"swapkl"


def installed_version(name: str) -> str | None:
    """The version of package ``name``: its module's ``__version__`` where this process imported it (the version
    that ran), else its installed distribution's, read from the metadata without importing it (a table job does
    not spend seconds loading torch to name its version; ``gguf`` has no ``__version__``); None where it is not
    installed."""
    module = sys.modules.get(name)
    if getattr(module, "__version__", None) is not None:
        return str(module.__version__)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def software_versions() -> dict:
    """swapkl's version and source hash, Python, torch and transformers (:func:`installed_version`)."""
    return {
        "swapkl_version": __version__,
        "swapkl_source_sha256": source_sha256(),
        "python": platform.python_version(),
        "torch": installed_version("torch"),
        "transformers": installed_version("transformers"),
    }


def table_versions() -> dict:
    """What every Parquet file records (:func:`swapkl.tables.parquet_io.write_parquet` adds it where a writer did not):
    swapkl's version and source hash, Python, pyarrow and pandas, without importing torch."""
    return {"swapkl_version": __version__, "swapkl_source_sha256": source_sha256(),
            "python": platform.python_version(), "pyarrow": pyarrow.__version__, "pandas": pandas.__version__}


def file_sha256(path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def input_sha256(paths) -> dict:
    """``{path: sha256}`` of every input file a table was computed from (``None`` entries skipped)."""
    out = {}
    for path in paths:
        if path is not None:
            out[str(path)] = file_sha256(path)
    return out


def derived(input_files, /, **extra) -> dict:
    """Provenance of a table computed from other files: :func:`table_versions`, the sha256 of every input
    (``input_sha256``) and ``extra``."""
    return table_versions() | {"input_sha256": input_sha256(input_files)} | extra


@functools.lru_cache(maxsize=1)
def source_sha256() -> str:
    """sha256 over the swapkl package's Python sources (relative paths and contents, sorted).

    The version number does not change with every edit of a development install; this does,
    so results (and resumable progress) from different code are never mixed up.
    """
    root = Path(__file__).resolve().parents[1]  # the swapkl package (this file is swapkl/tables/provenance.py)
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
            model_config_sha256=loaded.config_sha256,
            tokenizer_sha256=loaded.tokenizer_sha256,
            dtype=loaded.dtype,
            device=loaded.device,
            allow_pickle=loaded.allow_pickle,
            trust_remote_code=loaded.trust_remote_code,
        )
        # recorded only where set, so the records of the default (transformers' own) forward stay as they were
        if getattr(loaded, "compute_dtype", None) is not None:
            out.update(compute_dtype=loaded.compute_dtype)
        if getattr(loaded, "rope_scaling", "config") != "config":
            out.update(rope_scaling=loaded.rope_scaling)
        if getattr(loaded, "logits_dtype", "float32") != "float32":
            out.update(logits_dtype=loaded.logits_dtype)
        if getattr(loaded, "device_map", None) is not None:
            out["device_map"] = loaded.device_map
        if getattr(loaded, "gguf", None) is not None:  # a checkpoint converted from a GGUF (swapkl.model.gguf_convert)
            out["gguf"] = loaded.gguf
    if windows is not None:
        out.update(data_source=windows.source, tokens_sha256=windows.sha256,
                   n_seqs=int(windows.input_ids.shape[0]), seq_len=int(windows.input_ids.shape[1]),
                   bos_prepended=getattr(windows, "bos_token_id", None) is not None,
                   bos_token_id=getattr(windows, "bos_token_id", None))
        if getattr(windows, "pad_token_id", None) is not None:
            out.update(pad_token_id=windows.pad_token_id)
    out.update(extra)
    return out


# Fields on which files that are combined (the protocols of one checkpoint) must agree.
COMPARABLE = ("weights_sha256", "model_config_sha256", "tokens_sha256", "dtype", "trust_remote_code", "kl_options", "rope",
              "logits_dtype")
# Fields on which all revisions of one model must agree, so that they can be compared along training.
COMPARABLE_ACROSS_REVISIONS = ("tokens_sha256", "dtype")
# Fields that every table of a probe run records (:func:`build`): a table that lacks one was not written by this
# version, and nothing can be said about what it was measured on, so a check that compares the field refuses it.
# (The settings fields after them were added with the option they record: their absence means the one
# setting that versions without them could run, and absent agrees with absent only.)
RECORDED = ("weights_sha256", "model_config_sha256", "tokens_sha256", "dtype")


def require_recorded(path, prov: dict, names, what: str) -> None:
    """Refuse the table ``path`` (a ``what``) whose provenance lacks one of the fields ``names`` that a check
    compares: absent is never agreement."""
    for name in names:
        if prov.get(name) is None:
            raise SwapKLError(f"{what} {str(path)!r} records no {name} in its provenance, so it cannot be checked: it "
                              "was written by an older or unknown version of swapkl; make it again")


def check_comparable(seen: dict, path: str, prov: dict, what: str, fields=COMPARABLE) -> None:
    """Raise unless ``prov`` (of file ``path``) agrees with the files before it on every one of ``fields``; a file
    that lacks one of the :data:`RECORDED` fields among them is refused (:func:`require_recorded`).

    ``seen`` maps field -> (value, first file) and is filled in by the first file.
    """
    require_recorded(path, prov, [n for n in fields if n in RECORDED], "table")
    for name in fields:
        value = prov.get(name)
        if name not in seen:
            seen[name] = (value, path)
            continue
        first, where = seen[name]
        if value != first:
            raise SwapKLError(f"{path}: {name} differs from {where} for {what} ({_short(value)} vs {_short(first)}); "
                              "files measured on different weights, config, data or dtype cannot be compared")


def checkpoints(provs) -> list[dict]:
    """The checkpoints behind tables with provenances ``provs``: model, revision and weights_sha256 of each,
    flattened through aggregates (which record theirs under ``checkpoints``). An aggregate writes this list
    into its own provenance, so that a table made from it can still be checked against a model."""
    out: list[dict] = []
    for prov in provs:
        if isinstance(prov.get("checkpoints"), list):
            out += [c for c in prov["checkpoints"] if isinstance(c, dict)]
        elif prov.get("weights_sha256"):
            out.append({"model": prov.get("model") or prov.get("model_id"),
                        "revision": prov.get("revision_label") or prov.get("revision"),
                        "weights_sha256": prov["weights_sha256"]})
    unique = {(c.get("model"), c.get("revision"), c.get("weights_sha256")): c for c in out}
    return [unique[k] for k in sorted(unique, key=lambda k: tuple(str(x) for x in k))]


def require_made_from(path, prov: dict, weights_sha256: str, model: str, what: str) -> set:
    """Refuse a table that was made from other weights than those of ``model`` (hash ``weights_sha256``), or
    that records no weights (:func:`require_recorded`).

    Returns the (model, revision) labels of the table's checkpoints with those weights (an aggregate may
    hold others too: only these rows belong to the model).
    """
    cks = checkpoints([prov])
    if not cks or any(not c.get("weights_sha256") for c in cks):
        require_recorded(path, {}, ["weights_sha256"], what)
    match = {(c.get("model"), c.get("revision")) for c in cks if c.get("weights_sha256") == weights_sha256}
    if match:
        return match
    first = cks[0]
    held = f"{first.get('model')}@{first.get('revision')}" + (f" and {len(cks) - 1} more" if len(cks) > 1 else "")
    raise SwapKLError(f"{what} {str(path)!r} was made from other weights than {model!r}: it holds {held} (weights "
                      f"sha256 {str(first.get('weights_sha256'))[:12]}...), the model's weights have sha256 "
                      f"{weights_sha256[:12]}...; give the {what} of this checkpoint")


def _short(value) -> str:
    return repr(value[:12] + "...") if isinstance(value, str) and len(value) > 16 else repr(value)


def read(path: str) -> dict:
    require_regular_file(path, "Parquet file")
    try:
        meta = pq.read_schema(path).metadata or {}
    except Exception as e:
        raise SwapKLError(f"{path!r} is not a readable Parquet file: {e}") from e
    if METADATA_KEY not in meta:
        raise SwapKLError(f"{path!r} carries no swapkl provenance")
    try:
        prov = json.loads(meta[METADATA_KEY])
    except ValueError as e:
        raise SwapKLError(f"{path!r} carries swapkl provenance that is not valid JSON ({e})") from None
    if not isinstance(prov, dict):
        raise SwapKLError(f"{path!r} carries swapkl provenance that is not a JSON object")
    return prov


#: a list or mapping whose one-line JSON is longer than this is printed indented, one item per line
ONE_LINE = 100


def format_text(prov: dict, *, compact: bool = False) -> str:
    """``key  value`` lines, keys aligned; a list or mapping longer than :data:`ONE_LINE` characters as indented
    JSON below its key (``compact``: every value on one line)."""
    width = max((len(k) for k in prov), default=0)
    lines = []
    for k in sorted(prov):
        v = prov[k]
        if isinstance(v, (dict, list)):
            one = json.dumps(v, sort_keys=True)
            v = one if compact or len(one) <= ONE_LINE else json.dumps(v, sort_keys=True, indent=2).replace(
                "\n", "\n" + " " * (width + 2))
        lines.append(f"{k:<{width}}  {v}")
    return "\n".join(lines)
