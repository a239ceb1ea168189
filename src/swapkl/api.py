"""The Python API for notebooks: probe a model on token windows, aggregate, prune by a guide, draw a figure.

The functions run the command line's code in memory, so the numbers and the checks are the same:

* :func:`probe` measures a loaded transformers model as it is (no copy of its weights, no file; its train/eval
  modes are left as they were), or a checkpoint folder or hub id, through
  :func:`swapkl.probes.probe.probe_loaded` (what ``swapkl probe`` runs). It returns one row per variant; the
  per-window sums behind every interval are kept with the frame (``per_window=True`` shows them).
* :func:`aggregate` computes :func:`swapkl.probes.aggregate.aggregate_rows` (``swapkl aggregate``) on those tables;
  ``kind="pair"`` gives the pair rows alone, with each gap's 95% interval and each ``d_inter``'s.
* :func:`select_blocks` runs one guide of the registry (:mod:`swapkl.pruning.guides`) on the probe rows, as
  ``swapkl prune`` does for every guide; :func:`prune` returns the model without those blocks
  (:func:`swapkl.relevance.pruned_model.materialise`, checked against the engine's variant).
* :func:`plot` draws a registered figure (``swapkl figures KIND``) of an aggregate that :func:`aggregate` returned.

Nothing is written unless ``folder`` is given: then :func:`probe` writes ``probe.parquet`` (and ``repr.parquet``)
there and :func:`aggregate` ``aggregate.parquet``, the files ``swapkl probe`` and ``swapkl aggregate`` write, and
a file already there is never overwritten. The tables travel in the frame's ``attrs["swapkl"]``; a frame whose rows
differ from them (edited or filtered) is refused. The attrs also hold a sha256 of each probed tensor (in the
probe's dtype), against which :func:`prune` checks the model it is given, as ``swapkl prune`` checks the
checkpoint's weights_sha256.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from PIL import Image

import swapkl.studies  # noqa: F401  (the study folders register the figures they hold)
from swapkl.adapters import get_adapter
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import token_windows
from swapkl.errors import SwapKLError
from swapkl.figures.figure_registry import AGGREGATE, figure
from swapkl.model.in_memory import loaded_module, modes_kept
from swapkl.model.loading import DTYPES, load_model
from swapkl.model.weights_fingerprint import folder_digests, require_same_weights
from swapkl.options import require_device, require_int
from swapkl.probes.aggregate import aggregate_frame, aggregate_rows, aggregate_table, settings
from swapkl.probes.aggregate_inputs import probe_input, repr_input
from swapkl.probes.pairs import parse_pair_set
from swapkl.probes.probe import probe_loaded, quiet_hf_progress, probe_outputs
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.probes.protocols import parse_protocols
from swapkl.pruning.guides import get_guide
from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.selection import check_budget
from swapkl.relevance.pruned_model import materialise
from swapkl.tables.parquet_io import write_parquet, write_parquets
from swapkl.tables.schemas import SEQ_COLUMNS

__all__ = ["aggregate", "plot", "probe", "prune", "select_blocks"]

#: the key of ``DataFrame.attrs`` under which the tables travel
ATTRS = "swapkl"
#: what the records call the windows a call was given
WINDOWS = "the windows argument"
#: the files :func:`probe` and :func:`aggregate` write into a given ``folder``
FILES = ("probe.parquet", "repr.parquet", "aggregate.parquet")


def probe(model, windows, *, pairs: str = "adjacent", protocols: str | Sequence[str] = ("replacement", "interchange",
          "deletion"), name: str | None = None, revision: str | None = None, dtype: str | None = None,
          device: str = "auto", batch_size: int = 8, folder: str | None = None,
          per_window: bool = False) -> pd.DataFrame:
    """Probe ``model`` on ``windows`` (token ids ``[n_windows, n_tokens]``, every position scored): one row per
    variant of ``protocols`` (a name or a sequence of names) x ``pairs`` and the base model's row, as
    ``swapkl probe`` writes them.

    ``model``: a loaded transformers causal LM of a supported architecture (an ``nn.Module``, probed where it is,
    in its own dtype: ``dtype`` and ``device`` may only name those), or what ``swapkl probe --model`` takes (a
    checkpoint folder, a hub id with ``revision``; ``dtype`` default float32). ``name``: the ``model`` column
    (default: the checkpoint's or the module's name, without the folders above it). ``per_window``: also show the
    per-window sums (``seq_*`` columns). ``folder``: also write ``probe.parquet`` (and ``repr.parquet``) there."""
    protocols = (protocols,) if isinstance(protocols, str) else tuple(protocols)
    parse_protocols(list(protocols))
    parse_pair_set(pairs)
    require_int("batch_size", batch_size, 1)
    require_device(device)
    array = _token_array(windows)
    _require_new_files(folder, FILES[:2])
    is_module = isinstance(model, torch.nn.Module)
    if not is_module and not isinstance(model, (str, os.PathLike)):
        raise SwapKLError(f"model must be a checkpoint folder, a hub id or a loaded transformers model, not "
                          f"{type(model).__name__}")
    label = name or _name(model)
    if is_module:
        loaded, digests = loaded_module(model, name=label, dtype=dtype, device=device)
    else:
        with quiet_hf_progress():
            loaded = load_model(str(model), revision, dtype=dtype or "float32", device=device, need_tokenizer=False)
        digests = folder_digests(loaded.path, DTYPES[loaded.dtype])
    job = ProbeJob(model=loaded.path, out=FILES[0], data=DataSpec(tokens=WINDOWS), protocols=protocols, pairs=pairs,
                   dtype=loaded.dtype, device=loaded.device, batch_size=batch_size)
    repr_out = FILES[1] if "deletion" in protocols else None
    outputs = probe_outputs(parse_protocols(list(protocols)), FILES[0], None, repr_out)
    with modes_kept(loaded.model):
        files, _ = probe_loaded(job, loaded, token_windows(array, WINDOWS, WINDOWS), outputs, label=label,
                                revision=loaded.revision or "main", metadata={})
    tables = {os.path.splitext(path)[0]: (table, prov) for table, path, prov in files}
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
        write_parquets([(table, os.path.join(folder, path), prov) for table, path, prov in files])
    rows = tables["probe"][0].to_pandas()
    shown = rows if per_window else rows.drop(columns=list(SEQ_COLUMNS))
    shown.attrs[ATTRS] = dict(tables=tables, pairs=pairs, dtype=loaded.dtype, weights=digests, folder=folder)
    return shown


def aggregate(table: pd.DataFrame, *, pair_sets: Sequence[str] | None = None, n_boot: int = 1000, seed: int = 0,
              kind: str | None = None) -> pd.DataFrame:
    """The aggregate (``swapkl aggregate``) of a table that :func:`probe` returned: per pair ``d_repl_max``,
    ``d_inter``, ``gap``, ``ratio_ir`` and the classes (``kind == "pair"``), per pair set the summary with the
    bootstrap CI of the mean gap (``kind == "summary"``), per variant its KL with its CI (``"directed"``).
    ``pair_sets`` default: the probed one. ``kind``: only the rows of that kind, with only the columns it fills;
    there the pair rows' intervals are named ``gap_ci_low``/``gap_ci_high`` and ``d_inter_ci_low``/
    ``d_inter_ci_high`` (95%, the windows resampled ``n_boot`` times)."""
    state = _state(table)
    _probe_rows(table, state)
    if kind is not None and kind not in ("directed", "pair", "summary", "repr"):
        raise SwapKLError(f"kind must be one of directed, pair, summary, repr (or None: all), not {kind!r}")
    if state.get("folder") is not None:
        _require_new_files(state["folder"], FILES[2:])
    probe_table, probe_prov = state["tables"]["probe"]
    probes = [probe_input(probe_table, probe_prov, "the probe table")]
    reprs = [repr_input(*state["tables"]["repr"], "the representation table")] if "repr" in state["tables"] else []
    sets = list(pair_sets) if pair_sets is not None else [state["pairs"]]
    rows, all_sets, dups = aggregate_rows(probes, reprs, {probes[0].model: sets}, n_boot=n_boot, seed=seed)
    arrow = aggregate_table(rows, all_sets)
    provenance = {"kind": "aggregate", **settings({probes[0].model: sets}, n_boot, seed, dups),
                  "inputs": [{"file": None, "role": role, "model": x.model, "revision": x.revision,
                              "provenance": x.provenance}
                             for role, items in (("probe", probes), ("repr", reprs)) for x in items]}
    if state.get("folder") is not None:
        write_parquet(arrow, os.path.join(state["folder"], FILES[2]), provenance)
    out = aggregate_frame(arrow)
    out.attrs[ATTRS] = dict(aggregate=(arrow, provenance))
    return out if kind is None else _kind_view(out, kind)


def _kind_view(agg: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The rows of ``kind`` with the columns they fill; pair rows get their gap's and their d_inter's interval."""
    rows = agg[agg["kind"] == kind].reset_index(drop=True)
    if kind == "pair":
        directed = agg[(agg["kind"] == "directed") & (agg["protocol"] == "interchange") & agg["head"].isna()]
        ci = directed[["model", "revision", "layer_i", "layer_j", "kl_ci_low", "kl_ci_high"]].rename(
            columns={"kl_ci_low": "d_inter_ci_low", "kl_ci_high": "d_inter_ci_high"})
        rows = rows.rename(columns={"ci_low": "gap_ci_low", "ci_high": "gap_ci_high"}).drop(
            columns=["kl_ci_low", "kl_ci_high"]).merge(ci, on=["model", "revision", "layer_i", "layer_j"], how="left")
    rows = rows.loc[:, [c for c in rows.columns if c == "kind" or rows[c].notna().any()]]
    rows.attrs = {}  # a view: swapkl.plot takes the whole aggregate
    return rows


def select_blocks(table: pd.DataFrame, *, guide: str = "interchange", budget: int = 1,
                  spacing: int = 1) -> list[int]:
    """The blocks that ``guide`` (a guide of ``swapkl prune`` that reads the probe files: interchange,
    replacement_max, replacement_mean, deletion, anti_interchange, bi, angular, ...) removes at ``budget``
    with ``spacing`` blocks between removed ones, from a table that :func:`probe` returned."""
    state = _state(table)
    rows = _probe_rows(table, state)
    rep = state["tables"]["repr"][0].to_pandas() if "repr" in state["tables"] else None
    n_layers = int(rows["n_layers"].iloc[0])
    check_budget(budget, n_layers, spacing)
    chosen = get_guide(guide)
    if not chosen.chooses:
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
    state = _state(table)
    _require_probed_model(model, table, state)
    removed = select_blocks(table, guide=guide, budget=budget, spacing=spacing)
    with modes_kept(model):
        return materialise(model, removed)


def plot(name: str, table: pd.DataFrame, *, model: str | None = None, revision: str | None = None,
         out: str | None = None):
    """Draw the registered figure ``name`` (``swapkl figures NAME``: heatmaps, gap-trajectory, ratio-by-distance,
    deletion-vs-bi, weight-protocols, ...; one drawn from the aggregate alone) of ``table``, an aggregate that
    :func:`aggregate` returned (all its rows: no ``kind``). ``model`` and ``revision`` pick the instance (default:
    the only one). ``out``: also keep the figure as ``out.png`` and ``out.pdf`` (neither may exist yet). Returns the
    PNG as a PIL image, which a notebook shows."""
    entry = figure(name.replace("-", "_"))
    state = getattr(table, "attrs", {}).get(ATTRS) or {}
    if "aggregate" not in state:
        raise SwapKLError("give plot the DataFrame that swapkl.aggregate returned (all its rows: without kind)")
    others = sorted(set(entry.inputs.values()) - {AGGREGATE})
    if others:
        raise SwapKLError(f"figure {entry.kind} draws from {', '.join(others)} besides the aggregate: draw it with "
                          f"`swapkl figures {entry.kind}` from the workflow's tables")
    arrow, _ = state["aggregate"]
    frame = aggregate_frame(arrow)  # a copy: the figure reads the frame, and never the caller's
    if not table.equals(frame):
        raise SwapKLError("the DataFrame differs from the aggregate its attrs hold: plot takes the frame "
                          "swapkl.aggregate returned, unedited")
    wildcards = {w: _instance(table, w, {"model": model, "revision": revision}[w]) for w in entry.wildcards}
    stem = None if out is None else (out[:-4] if out.lower().endswith((".png", ".pdf")) else out)
    if stem is not None:
        for path in (f"{stem}.png", f"{stem}.pdf"):
            if os.path.lexists(path):
                raise SwapKLError(f"{path!r} exists: give plot a new out")
    with tempfile.TemporaryDirectory(prefix="swapkl-") as tmp:  # the figure's files, where out names none
        png, pdf = (f"{stem}.png", f"{stem}.pdf") if stem else (os.path.join(tmp, "f.png"), os.path.join(tmp, "f.pdf"))
        entry.draw({key: frame for key in entry.inputs}, png, pdf, wildcards=wildcards, params={})
        with Image.open(png) as image:
            return image.copy()


def _instance(agg: pd.DataFrame, wildcard: str, given: str | None) -> str:
    """The value of ``wildcard`` (model or revision): ``given``, which the aggregate must hold, or its only one."""
    values = sorted(set(agg[wildcard].dropna()))
    if given is not None and given not in values:
        raise SwapKLError(f"the aggregate has no {wildcard} {given!r} (it has {', '.join(values)})")
    if given is None and len(values) != 1:
        raise SwapKLError(f"the aggregate has {len(values)} {wildcard}s ({', '.join(values)}): name one")
    return given if given is not None else values[0]


def _require_probed_model(model: torch.nn.Module, table: pd.DataFrame, state: dict) -> None:
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
    if state.get("weights") is None:
        raise SwapKLError("the table records no weights to compare the model with (its checkpoint has no "
                          "safetensors files): prune its checkpoint with `swapkl prune`")
    require_same_weights(model, state["weights"], DTYPES[state["dtype"]], "the table")


def _name(model) -> str:
    """A module's or a checkpoint's name, without the folders above it (a hub id keeps its owner)."""
    if isinstance(model, torch.nn.Module):
        given = str(getattr(model, "name_or_path", "") or "")
        return (os.path.basename(os.path.normpath(given)) if given and os.path.isdir(given) else given) \
            or model.config.model_type
    path = str(model)
    return os.path.basename(os.path.normpath(path)) if os.path.isdir(path) else path


def _token_array(windows) -> np.ndarray:
    """``windows`` as an integer array ``[n_windows, n_tokens]`` (the token file's own checks follow)."""
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
    return array


def _require_new_files(folder: str | None, names: Sequence[str]) -> None:
    """Never overwrite a file of another run or program: ``folder`` must not hold any of ``names`` yet."""
    if folder is None:
        return
    taken = [n for n in names if os.path.lexists(os.path.join(str(folder), n))]
    if taken:
        raise SwapKLError(f"{str(folder)!r} already holds {taken[0]!r}: give a new folder (or none: nothing is "
                          "written)")


def _state(table: pd.DataFrame) -> dict:
    state = getattr(table, "attrs", {}).get(ATTRS)
    if not state or "tables" not in state:
        raise SwapKLError("give the DataFrame that swapkl.probe returned (its attrs hold the probe's tables)")
    return state


def _probe_rows(table: pd.DataFrame, state: dict) -> pd.DataFrame:
    """The probe's rows, which must be ``table``'s (in the columns it shows): the aggregate and the guides compute
    from the whole table (with its per-window sums and the representation rows beside it), so an edited or
    filtered frame is refused rather than answered from rows it no longer holds."""
    rows = state["tables"]["probe"][0].to_pandas()
    if not table.equals(rows[list(table.columns)] if set(table.columns) <= set(rows.columns) else rows):
        raise SwapKLError(f"the DataFrame differs from the probe table its attrs hold ({len(table)} rows given, "
                          f"{len(rows)} probed): aggregate, select_blocks and prune compute from the table "
                          "swapkl.probe returned, unedited; probe the pairs and protocols you want instead, and "
                          "filter the results")
    return rows
