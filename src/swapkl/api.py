"""The Python API for notebooks: probe a model on token windows, aggregate, prune by a guide.

Each function wraps what the command line runs, so the numbers and the checks are the same:

* :func:`probe` writes the token windows to a ``.npy`` file and runs :func:`swapkl.probes.probe.run_probe` (what
  ``swapkl probe`` runs) on the model: a checkpoint folder or hub id, or a loaded transformers model, which is
  first saved (safetensors) to a folder of its own, so that it is loaded and checked as a checkpoint is (this
  needs the disk for one copy of its weights). It returns the probe file as a DataFrame, one row per variant.
* :func:`aggregate` runs :func:`swapkl.probes.aggregate.aggregate` (``swapkl aggregate``) on those files and
  returns the aggregate's rows (``kind``: directed, pair, summary, repr; docs/outputs.md).
* :func:`select_blocks` runs one guide of the registry (:mod:`swapkl.pruning.guides`) on the probe rows, as
  ``swapkl prune`` does for every guide; :func:`prune` returns the model without those blocks
  (:func:`swapkl.relevance.pruned_model.materialise`, checked against the engine's variant).

Every file goes to ``folder`` (default: a new temporary folder, whose files are removed, and it with them, when the
Python process ends; give ``folder`` to keep them), which the returned DataFrame names in ``df.attrs["swapkl"]``; :func:`aggregate` and :func:`select_blocks` read the files from there, and refuse a frame
whose rows are not the file's (edited or filtered). The attrs also hold a sha256 of each probed tensor (in the
probe's dtype), against which :func:`prune` checks the model it is given, as ``swapkl prune`` checks the
checkpoint's weights_sha256.
"""

from __future__ import annotations

import atexit
import os
import tempfile
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.adapters import get_adapter
from swapkl.model.loading import DTYPES, checkpoint_folder
from swapkl.model.weights_fingerprint import folder_digests, module_digests, require_same_weights
from swapkl.probes.aggregate import aggregate as aggregate_files
from swapkl.probes.aggregate import read_aggregate
from swapkl.probes.probe import run_probe
from swapkl.pruning.guides import GuideContext, get_guide
from swapkl.pruning.selection import check_budget
from swapkl.relevance.pruned_model import materialise
from swapkl.tables.schemas import PROBE_SCHEMA, REPR_SCHEMA, read_table

__all__ = ["aggregate", "probe", "prune", "select_blocks"]

#: the key of ``DataFrame.attrs`` under which :func:`probe` names its files
ATTRS = "swapkl"
#: what :func:`probe` writes into its folder (``checkpoint``: a loaded model saved there, removed afterwards)
FILES = ("windows.npy", "probe.parquet", "repr.parquet", "aggregate.parquet", "checkpoint")


def probe(model, windows, *, pairs: str = "adjacent", protocols: str | Sequence[str] = ("replacement", "interchange",
          "deletion"), name: str | None = None, revision: str | None = None, dtype: str | None = None,
          device: str = "auto", batch_size: int = 8, folder: str | None = None) -> pd.DataFrame:
    """Probe ``model`` on ``windows`` (token ids ``[n_windows, n_tokens]``, every position scored): one row per
    variant of ``protocols`` (a name or a sequence of names) x ``pairs`` and the base model's row, as
    ``swapkl probe`` writes them.

    ``model``: a loaded transformers causal LM of a supported architecture (an ``nn.Module``), or what
    ``swapkl probe --model`` takes (a checkpoint folder, a hub id with ``revision``). ``dtype``: the weights'
    dtype (default: the module's own; float32 for a path). ``name``: the ``model`` column (default the
    checkpoint's name). ``folder``: where the files go (default a new temporary folder, removed when the Python
    process ends); existing files of
    another program are never overwritten, and a refused call removes the files it wrote (and a folder it made),
    so that the corrected call can use the same folder. The DataFrame's ``attrs`` also record a sha256 of each
    probed tensor, which :func:`prune` checks."""
    protocols = (protocols,) if isinstance(protocols, str) else tuple(protocols)
    made = folder is None or not os.path.lexists(folder)
    if folder is None:  # a temporary folder: its files go when the Python process ends
        folder = tempfile.mkdtemp(prefix="swapkl-")
        atexit.register(_remove_own_files, folder, True)
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    taken = [n for n in FILES if os.path.lexists(os.path.join(folder, n))]
    if taken:  # never overwrite a file of another run or program
        raise SwapKLError(f"{folder!r} already holds {taken[0]!r}: give probe a new folder (or none: a temporary one)")
    tokens = os.path.join(folder, "windows.npy")
    try:
        return _probe(model, _token_array(windows), tokens, pairs=pairs, protocols=protocols, name=name,
                      revision=revision, dtype=dtype, device=device, batch_size=batch_size)
    except BaseException as e:
        _remove_own_files(folder, made)
        if isinstance(e, SwapKLError):  # the token file is this call's: name the argument it came from
            message = str(e).replace(f"tokens:{tokens}", "the windows argument")
            raise SwapKLError(message.replace(f"token file {tokens!r}", "the windows argument")) from None
        raise


def _probe(model, array: np.ndarray, tokens: str, *, pairs, protocols, name, revision, dtype, device,
           batch_size) -> pd.DataFrame:
    folder = os.path.dirname(tokens)
    if isinstance(model, torch.nn.Module) and dtype is None:
        dtype = _dtype_name(model)
    dtype = dtype or "float32"
    if dtype not in DTYPES:
        raise SwapKLError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    checkpoint, saved = _checkpoint(model, folder)
    digests = module_digests(model, DTYPES[dtype]) if saved else None
    np.save(tokens, array, allow_pickle=False)
    files = {"probe": os.path.join(folder, "probe.parquet"), "repr": os.path.join(folder, "repr.parquet")}
    if saved and name is None:  # not the temporary folder's path
        name = getattr(model, "name_or_path", "") or model.config.model_type
    elif name is None and os.path.isdir(str(model)):  # the folder's name, not its absolute path
        name = os.path.basename(os.path.normpath(str(model)))
    try:
        run_probe(checkpoint, files["probe"], revision=revision, protocols=protocols, pairs=pairs,
                  data=DataSpec(tokens=tokens), dtype=dtype, device=device, batch_size=batch_size,
                  repr_out=files["repr"] if "deletion" in protocols else None,
                  metadata={"model": name} if name else None)
    finally:
        if saved:
            _remove_saved(checkpoint)
    if digests is None:
        digests = folder_digests(checkpoint_folder(checkpoint, revision), DTYPES[dtype])
    if "deletion" not in protocols:
        files["repr"] = None
    table = read_table(files["probe"], PROBE_SCHEMA, "probe")[0].to_pandas()
    table.attrs[ATTRS] = dict(files, pairs=pairs, dtype=dtype, weights=digests)
    return table


def aggregate(table: pd.DataFrame, *, pair_sets: Sequence[str] | None = None, n_boot: int = 1000,
              seed: int = 0) -> pd.DataFrame:
    """The aggregate (``swapkl aggregate``) of a table that :func:`probe` returned: per pair ``d_repl_max``,
    ``d_inter``, ``gap``, ``ratio_ir`` and the classes (``kind == "pair"``), per pair set the summary with the
    bootstrap CI of the mean gap (``kind == "summary"``). ``pair_sets`` default: the probed one."""
    files = _files(table)
    _probe_rows(table, files)
    models = sorted(set(table["model"]))
    sets = list(pair_sets) if pair_sets is not None else [files["pairs"]]
    out = os.path.join(os.path.dirname(files["probe"]), "aggregate.parquet")
    aggregate_files([files["probe"]], [files["repr"]] if files["repr"] else [], out,
                    pair_sets={m: sets for m in models}, n_boot=n_boot, seed=seed)
    return read_aggregate(out)


def select_blocks(table: pd.DataFrame, *, guide: str = "interchange", budget: int = 1,
                  spacing: int = 1) -> list[int]:
    """The blocks that ``guide`` (a guide of ``swapkl prune`` that reads the probe files: interchange,
    replacement_max, replacement_mean, deletion, anti_interchange, bi, angular, ...) removes at ``budget``
    with ``spacing`` blocks between removed ones, from a table that :func:`probe` returned."""
    files = _files(table)
    rows = _probe_rows(table, files)
    rep = None if files["repr"] is None else read_table(files["repr"], REPR_SCHEMA, "representation")[0].to_pandas()
    n_layers = int(rows["n_layers"].iloc[0])
    check_budget(budget, n_layers, spacing)
    chosen = get_guide(guide)
    if chosen.select is None:
        raise SwapKLError(f"guide {guide!r} is a row derived from the others, not a selection rule")
    selection = chosen.select(GuideContext(rows, rep, n_layers, [budget], spacing))
    if selection is None:
        raise SwapKLError(f"guide {guide!r} needs what this probe did not measure, or measures the model on "
                          "calibration windows: run `swapkl prune` for it")
    pruned = selection.removed.get((budget, None))
    if pruned is None:
        raise SwapKLError(f"guide {guide!r} finds no {budget} block(s) {spacing} apart to remove")
    if pruned.merged:
        raise SwapKLError(f"guide {guide!r} merges blocks; `swapkl export --merge` writes such a model")
    return list(pruned.removed)


def prune(model: torch.nn.Module, table: pd.DataFrame, *, guide: str = "interchange", budget: int = 1,
          spacing: int = 1) -> torch.nn.Module:
    """``model`` without the blocks :func:`select_blocks` chooses: the stock transformers class, sharing the
    source's tensors, its logits checked against the engine's variant of the same removed set. ``model`` must be
    the model ``table`` was measured on (its tensors are compared with the sha256s :func:`probe` recorded); its
    train/eval modes are left as they were."""
    if not isinstance(model, torch.nn.Module):
        raise SwapKLError(f"prune takes a loaded model (an nn.Module), not {type(model).__name__}")
    files = _files(table)
    _require_probed_model(model, table, files)
    removed = select_blocks(table, guide=guide, budget=budget, spacing=spacing)
    modes = {module: module.training for module in model.modules()}
    try:
        return materialise(model, removed)
    finally:
        for module, training in modes.items():
            module.training = training


def _require_probed_model(model: torch.nn.Module, table: pd.DataFrame, files: dict) -> None:
    """Refuse a model that ``table`` was not measured on: another block count, other tensors, or the same model
    changed since it was probed (what ``swapkl prune`` checks through the checkpoint's weights_sha256)."""
    n_layers = int(table["n_layers"].iloc[0])
    try:
        n_model = get_adapter(model).n_layers
    except SwapKLError as e:
        raise SwapKLError(f"prune: {e}") from None
    if n_model != n_layers:
        raise SwapKLError(f"the model has {n_model} blocks, but the table was measured on a model of {n_layers}: "
                          "prune takes the model that was probed")
    if files.get("weights") is None:
        raise SwapKLError("the table records no weights to compare the model with (its checkpoint has no "
                          "safetensors files): prune its checkpoint with `swapkl prune`")
    require_same_weights(model, files["weights"], DTYPES[files["dtype"]], "the table")


def _token_array(windows) -> np.ndarray:
    """``windows`` as an int64 array ``[n_windows, n_tokens]`` (the token file's own checks follow)."""
    if isinstance(windows, torch.Tensor):
        windows = windows.detach().cpu().numpy()
    try:
        array = np.asarray(windows)
    except ValueError:  # numpy refuses rows of different lengths
        lengths = sorted({len(w) for w in windows if hasattr(w, "__len__")})
        raise SwapKLError(f"windows must be token ids [n_windows, n_tokens] of one length; their lengths are "
                          f"{', '.join(map(str, lengths[:5]))}{', ...' if len(lengths) > 5 else ''}") from None
    if array.dtype == object:
        raise SwapKLError("windows must be token ids [n_windows, n_tokens] of one length, not a ragged or mixed "
                          "sequence")
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.integer):
        raise SwapKLError(f"windows must be integer token ids [n_windows, n_tokens], got {array.dtype} {array.shape}")
    return array.astype(np.int64)


def _checkpoint(model, folder: str) -> tuple[str, bool]:
    """(what run_probe loads, whether it is a folder saved here from a loaded module)."""
    if isinstance(model, (str, os.PathLike)):
        return str(model), False
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "save_pretrained"):
        raise SwapKLError(f"model must be a checkpoint folder, a hub id or a loaded transformers model, not "
                          f"{type(model).__name__}")
    if hasattr(model, "peft_config"):  # its save_pretrained writes the adapters only
        raise SwapKLError(f"model is a peft-wrapped {type(model).__name__}: probe the merged model "
                          "(model.merge_and_unload()) or its base model")
    path = os.path.join(folder, "checkpoint")
    model.save_pretrained(path, safe_serialization=True)
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise SwapKLError(f"model ({type(model).__name__}) saves no config.json: it is not a transformers causal "
                          "LM that swapkl can load")
    return path, True


def _remove_own_files(folder: str, made: bool) -> None:
    """After a refused :func:`probe`, or at exit for a temporary folder: remove what it wrote into ``folder`` (its
    FILES, none of which existed before), and the folder itself when the call made it and nothing else is in it."""
    if not os.path.isdir(folder):
        return
    for name in FILES:
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_saved(path)
        elif os.path.lexists(path):
            os.unlink(path)
    if made and not os.listdir(folder):
        os.rmdir(folder)


def _remove_saved(path: str) -> None:
    """Remove the folder :func:`_checkpoint` saved (only the files save_pretrained wrote there)."""
    for entry in os.listdir(path):
        os.unlink(os.path.join(path, entry))
    os.rmdir(path)


def _dtype_name(model: torch.nn.Module) -> str:
    names = {v: k for k, v in DTYPES.items()}
    dtype = next(model.parameters()).dtype
    if dtype not in names:
        raise SwapKLError(f"the model's weights are {dtype}; probe takes {', '.join(DTYPES)}")
    return names[dtype]


def _files(table: pd.DataFrame) -> dict:
    files = getattr(table, "attrs", {}).get(ATTRS)
    if not files:
        raise SwapKLError("give the DataFrame that swapkl.probe returned (its attrs name the probe files)")
    return files


def _probe_rows(table: pd.DataFrame, files: dict) -> pd.DataFrame:
    """The probe file's rows, which must be ``table``'s: the aggregate and the guides read the file (with its
    provenance and the representation rows beside it), so an edited or filtered frame is refused rather than
    answered from rows it no longer holds."""
    rows = read_table(files["probe"], PROBE_SCHEMA, "probe")[0].to_pandas()
    if not table.equals(rows):
        raise SwapKLError(f"the DataFrame differs from the probe file its attrs name ({len(table)} rows given, "
                          f"{len(rows)} in {files['probe']!r}): aggregate, select_blocks and prune compute from "
                          "the table swapkl.probe returned, unedited; probe the pairs and protocols you want "
                          "instead, and filter the results")
    return rows
