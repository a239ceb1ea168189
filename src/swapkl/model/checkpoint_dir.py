"""A checkpoint folder on disk, before any model is built (standard library only; ``safetensors`` only to read
weight files): where a model spec points, which weight files it has and whether they are whole, and the hashes
recorded in every output's provenance. The command line checks its model arguments with it without importing
torch."""

from __future__ import annotations

import hashlib
import json
import os

from swapkl.errors import SwapKLError
from swapkl.hub.absence import refuse_absent
from swapkl.tables.file_checks import describe, open_input, require_regular_file, safetensors_header_size

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


#: the shard indexes transformers reads (the second only for pickle weights): tensor name -> file of the folder
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def weights_sha256(path: str) -> str:
    """sha256 over the checkpoint's weight files (names and contents, sorted by name): those of its folder and
    every file its shard indexes name (:func:`indexed_shards`), whatever their suffix."""
    names = {n for n in os.listdir(path) if n.endswith(WEIGHT_SUFFIXES)} | set(indexed_shards(path))
    return files_sha256(path, sorted(names))


def indexed_shards(path: str, index_name: str | None = None) -> list[str]:
    """The files named by the checkpoint's shard indexes (``index_name`` only, when given), sorted, each once.

    An index may only name plain file names of the checkpoint's own folder: a folder in the name
    (``sub/x.safetensors``), ``..`` or an absolute path would load weights that its hash and the model
    argument do not describe, and is refused with the entry named."""
    names: set[str] = set()
    for name in SHARD_INDEXES if index_name is None else (index_name,):
        index = os.path.join(path, name)
        if not os.path.isfile(index):
            continue
        try:
            with open_input(index, "shard index") as f:
                shards = set(json.load(f)["weight_map"].values())
            bad = sorted((s for s in shards if not _plain_file_name(s)), key=repr)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise SwapKLError(f"shard index {index!r} is unreadable: {e}") from e
        if bad:
            raise SwapKLError(f"shard index {index!r} names {bad[0]!r}, which is not a file of the checkpoint folder; "
                              "only plain file names (no folder, '..' or absolute path) are loaded")
        names |= shards
    return sorted(names)


def _plain_file_name(name) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
            and "\0" not in name and os.path.basename(name) == name and not os.path.isabs(name))


def files_sha256(path: str, names: list[str]) -> str:
    """sha256 over the files ``names`` of folder ``path`` (each name, a NUL, its contents)."""
    h = hashlib.sha256()
    for n in names:
        h.update(n.encode() + b"\0")
        with open_input(os.path.join(path, n), "checkpoint file") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def is_local_spec(model: str) -> bool:
    """Whether ``model`` names a local folder rather than a hub id."""
    return os.path.isabs(model) or model.startswith((".", "~")) or os.path.exists(model) or model.count("/") > 1


def resolve_checkpoint_dir(model: str, revision: str | None) -> tuple[str, str | None]:
    """Local directory for ``model`` [at ``revision``]. Hub ids are returned unchanged."""
    if not is_local_spec(model):
        return model, revision
    path = os.path.expanduser(model)
    if not os.path.exists(path):
        raise SwapKLError(f"model path {model!r} does not exist")
    if not os.path.isdir(path):
        raise SwapKLError(f"model path {model!r} is {describe(os.stat(path).st_mode)}, not a checkpoint directory")
    if revision:
        if revision in (".", "..") or "/" in revision or os.sep in revision or os.path.isabs(revision):
            # a revision is one subdirectory of the local model, never a path to somewhere else
            raise SwapKLError(f"revision {revision!r} of local model {model!r} must be the name of one of its "
                              "subdirectories (no '/', '.' or '..')")
        sub = os.path.join(path, revision)
        if os.path.isdir(sub):
            return sub, revision
        # a local checkpoint directory is one revision: a revision that names no subdirectory is an error,
        # never a label silently attached to other weights
        raise SwapKLError(f"revision {revision!r} not found under local model {model!r}")
    refuse_absent(path, "model path")
    if not os.path.isfile(os.path.join(path, "config.json")):
        revisions = sorted((n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n, "config.json"))),
                           key=lambda n: (len(n), n))
        if revisions:  # a training run's folder: its checkpoints are its subfolders
            shown = ", ".join(revisions[:4]) + (f" and {len(revisions) - 4} more" if len(revisions) > 4 else "")
            raise SwapKLError(f"model path {model!r} holds revisions ({shown}), not one checkpoint: name one with "
                              "--revision")
        raise SwapKLError(f"model path {model!r} has no config.json (not a Hugging Face checkpoint)")
    return path, revision



def check_weight_files(path: str, allow_pickle: bool) -> bool:
    """Refuse pickle-only checkpoints (unless allowed) and truncated or corrupt safetensors files.

    Returns whether the checkpoint has safetensors weights (then they are always the ones loaded).
    """
    names = os.listdir(path)
    for n in sorted(names):
        if n.endswith(WEIGHT_SUFFIXES) or n in SHARD_INDEXES:
            require_regular_file(os.path.join(path, n), "weight file")
    indexed_shards(path)  # any index's entries are plain file names of the folder
    st = sorted(n for n in names if n.endswith(".safetensors"))
    if not st:
        pickles = sorted(n for n in names if n.endswith(WEIGHT_SUFFIXES))
        if not pickles:
            raise SwapKLError(f"checkpoint {path!r} has no weight files (*.safetensors)")
        if not allow_pickle:
            raise SwapKLError(f"checkpoint {path!r} has only pickle weights ({', '.join(pickles)}); "
                              "they load only with `allow_pickle`")
        return False
    st = sorted(set(st) | set(check_shard_index(path)))  # a shard named without the suffix is read too
    from safetensors import safe_open

    for n in st:
        file = os.path.join(path, n)
        check_safetensors_size(file)
        try:
            with safe_open(file, framework="pt") as f:
                for k in f.keys():
                    f.get_slice(k)
        except Exception as e:
            raise SwapKLError(f"weight file {file!r} is corrupt: {e}") from e
    return True


def check_shard_index(path: str) -> list[str]:
    """Every shard named by ``model.safetensors.index.json`` must be present; returns their names."""
    shards = indexed_shards(path, "model.safetensors.index.json")
    missing = [s for s in shards if not os.path.isfile(os.path.join(path, s))]
    if missing:
        raise SwapKLError(f"checkpoint {path!r} lacks the weight shard(s) {', '.join(missing)} named in its index")
    for s in shards:
        require_regular_file(os.path.join(path, s), "weight file")
    return shards


def check_safetensors_size(path: str) -> None:
    """The header must parse and its largest data offset must fit in the file (catches truncation)."""
    n, size = safetensors_header_size(path, "weight file")
    if n is None or 8 + n > size:
        need = "at least 8" if n is None else str(8 + n)
        raise SwapKLError(f"weight file {path!r} is truncated: {size} bytes, its header needs {need}")
    with open_input(path, "weight file") as f:
        f.seek(8)
        try:
            header = json.loads(f.read(n))
            end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise SwapKLError(f"weight file {path!r} is corrupt: unreadable safetensors header ({e})") from e
    if 8 + n + end > size:
        raise SwapKLError(f"weight file {path!r} is truncated: {size} bytes, its header needs {8 + n + end}")


def check_loading_info(path: str, info: dict) -> None:
    """Every tensor of the model must come from the checkpoint, and every checkpoint tensor must be used.

    transformers fills a missing tensor with random values and drops an unexpected one with only a
    warning; either way the numbers would belong to a model that does not exist.
    """
    mismatched = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])
    if mismatched:
        name, got, want = mismatched[0]
        raise SwapKLError(f"weight tensor {name!r} of {path!r} has shape {list(got)} but its config.json needs "
                          f"{list(want)} ({len(mismatched)} mismatched tensor(s)); weights and config do not match")
    for kind, what in (("missing_keys", "lacks the weight tensor"), ("unexpected_keys", "has the weight tensor")):
        names = sorted(info.get(kind) or [])
        if names:
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            tail = "that its config.json needs" if kind == "missing_keys" else "that its config.json does not use"
            raise SwapKLError(f"checkpoint {path!r} {what} {names[0]!r}{more} {tail}; weights and config do not "
                              "match")
    if info.get("error_msgs"):
        raise SwapKLError(f"cannot load weights of {path!r}: {' '.join(str(info['error_msgs'][0]).split())}")


def share_tree(folder: str) -> None:
    """Folders 0755 and files 0644 under ``folder`` (less what the umask removes): an export is readable by the
    group and others like any file the user creates, not private like a temporary folder."""
    mask = os.umask(0o022)
    os.umask(mask)
    for root, dirs, files in os.walk(folder):
        os.chmod(root, 0o755 & ~mask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644 & ~mask)
