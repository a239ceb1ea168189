"""The third test: is a variant still different from its base after the model had a chance to adapt?

Protocols ``healed_replacement``, ``healed_interchange`` and ``healed_deletion``. For each selected pair (or
block) of the base protocol:

1. the variant is built as a standalone model (the export's renumbering, :func:`materialise`; a block used
   at two slots gets two independent copies);
2. it is healed toward the base model's own next-token distribution: :mod:`swapkl.recovery.heal` with ``loss: kl``
   (``KL(p_base || p_variant)`` on calibration chunks, the base model as the frozen teacher), LoRA by default;
3. ``KL(p_base || p_variant)`` is measured on the probe windows (:func:`swapkl.recovery.heal_scores.kl_to_base`) after
   each step count of ``curve_steps`` and after the last step, so the table shows whether the variant reaches
   the base or only approaches it.

The calibration text must come from another source than the probe windows (another file, dataset or split);
the heal never sees a probe window. At zero steps a healed protocol is its base protocol: the standalone
variant runs the same blocks on the same inputs as the probe engine's variant, and LoRA adapters start at 0.

Selection (recorded in the provenance): ``extremes`` keeps, for each base protocol, the k pairs (blocks) of
lowest and the k of highest KL (pairs ranked by replacement max over both directions and by interchange);
``random`` k pairs and k blocks drawn with ``numpy.random.default_rng(seed)``; ``all`` every probed pair and
block. A selected pair is healed under both replacement directions and interchange, so its protocol gap
``max(d_repl(i<-j), d_repl(j<-i)) - d_inter`` is known before and after.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.recovery.heal import prepare_trainable, train, train_chunks
from swapkl.recovery.heal_settings import HealSettings, TrainText
from swapkl.recovery.healed_jobs import HEALED, SELECTIONS, HealedProbeJob
from swapkl.recovery.heal_scores import kl_to_base
from swapkl.model.variant import Variant
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.probes.protocols.interchange import interchange
from swapkl.probes.protocols.replacement import replacement
from swapkl.adapters import get_adapter
from swapkl.hub.revision_names import step_of
from swapkl.data.windows import load_windows
from swapkl.export import export_config, export_state_dict
from swapkl.model.loading import load_model
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import PROBE_SCHEMA, read_frame

log = logging.getLogger(__name__)



def materialise(model, order: tuple[int, ...]):
    """A standalone copy of ``model`` that runs blocks ``order`` at slots 0..len(order)-1."""
    from transformers import AutoModelForCausalLM


    adapter = get_adapter(model)
    state = export_state_dict(model, adapter.blocks, tuple(order))
    cfg = export_config(model.config, tuple(order))
    out = AutoModelForCausalLM.from_config(cfg, dtype=model.dtype)
    missing, unexpected = out.load_state_dict({k: v.clone() for k, v in state.items()}, strict=False)
    tied = {n + ".weight" for n, m in out.named_modules() if m is out.get_output_embeddings()}
    if unexpected or set(missing) - tied:
        raise SwapKLError(f"cannot build the variant model: missing {sorted(missing)}, unexpected {sorted(unexpected)}")
    if set(missing) and out.get_output_embeddings().weight is not out.get_input_embeddings().weight:
        raise SwapKLError("the variant model lost its LM head")
    return out.to(next(model.parameters()).device).eval()


def _pair_scores(probe: pd.DataFrame) -> pd.DataFrame:
    """Per unordered pair: replacement max over both directions and interchange (NaN where not probed)."""
    rep = probe[probe["protocol"] == "replacement"]
    d = {(int(r.layer_i), int(r.layer_j)): r.kl_mean for r in rep.itertuples(index=False)}
    inter = {(int(r.layer_i), int(r.layer_j)): r.kl_mean
             for r in probe[probe["protocol"] == "interchange"].itertuples(index=False)}
    pairs = sorted({(min(i, j), max(i, j)) for i, j in d} | set(inter))
    return pd.DataFrame([dict(i=i, j=j, repl_max=max(d.get((i, j), np.nan), d.get((j, i), np.nan)),
                              inter=inter.get((i, j), np.nan)) for i, j in pairs])


def _extremes(values: pd.Series, k: int) -> list:
    s = values.dropna().sort_values(kind="stable")
    return list(s.index[:k]) + list(s.index[max(k, len(s) - k):])


def select(probe: pd.DataFrame, protocols: list[str], selection: str, k: int, seed: int = 0):
    """``(pairs [(i, j)], blocks [i])`` to heal, from the base protocols' probe rows (see module docstring)."""
    if selection not in SELECTIONS:
        raise SwapKLError(f"selection must be one of {', '.join(SELECTIONS)}, got {selection!r}")
    pairs_df = _pair_scores(probe)
    dele = probe[probe["protocol"] == "deletion"].set_index("layer_i")["kl_mean"]
    want_pairs = any(p in protocols for p in ("healed_replacement", "healed_interchange"))
    want_blocks = "healed_deletion" in protocols
    if want_pairs and pairs_df.empty or want_blocks and dele.empty:
        raise SwapKLError("the probe tables lack the base protocols of the requested healed protocols")
    if selection == "all":
        keep, blocks = list(pairs_df.index), list(dele.index)
    elif selection == "random":
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(len(pairs_df), size=min(k, len(pairs_df)), replace=False).tolist()) if want_pairs else []
        blocks = sorted(rng.choice(dele.index.to_numpy(), size=min(k, len(dele)), replace=False).tolist()) \
            if want_blocks else []
    else:
        keep = sorted(set(_extremes(pairs_df["repl_max"], k)) | set(_extremes(pairs_df["inter"], k)))
        blocks = sorted(set(_extremes(dele, k)))
    pairs = [(int(pairs_df.at[x, "i"]), int(pairs_df.at[x, "j"])) for x in keep] if want_pairs else []
    return pairs, [int(b) for b in blocks] if want_blocks else []


def variants_to_heal(pairs, blocks, protocols: list[str], n_layers: int) -> list[tuple[str, Variant]]:
    out = []
    for i, j in pairs:
        if "healed_replacement" in protocols:
            out += [("healed_replacement", replacement(i, j, n_layers)), ("healed_replacement", replacement(j, i, n_layers))]
        if "healed_interchange" in protocols:
            out.append(("healed_interchange", interchange(i, j, n_layers)))
    out += [("healed_deletion", deletion(b, n_layers)) for b in blocks]
    return out


def heal_variant(base_model, variant: Variant, chunks: np.ndarray, settings: HealSettings, windows, *,
                 curve_steps=(), batch_size: int = 8, device: str = "cpu") -> list[dict]:
    """Heal one variant by KL distillation toward ``base_model``; return one record per measured step count
    with the per-window KL sums on the probe windows. The loss is always the KL to the base model."""
    settings = dataclasses.replace(settings, loss="kl")
    student = prepare_trainable(materialise(base_model, variant.order), settings)
    measure_at = sorted({0, settings.steps, *[s for s in curve_steps if 0 <= s <= settings.steps]})
    records = []

    def on_step(step, model):
        if step in measure_at:
            net = model.get_base_model() if hasattr(model, "get_base_model") else model
            sums, tokens = kl_to_base(base_model, [net], windows.input_ids, windows.attention_mask,
                                      batch_size=batch_size, device=device, desc=None)
            records.append(dict(step=step, seq_kl_sum=sums[0], seq_tokens=tokens))

    for p in base_model.parameters():
        p.requires_grad_(False)
    train(student, chunks, settings, teacher=base_model, on_step=on_step, desc=f"heal {variant.key}")
    return records


def _ratio(sums, tokens) -> float:
    return float(np.sum(sums) / np.sum(tokens))


def _rows(protocol: str, v: Variant, records: list[dict], settings: HealSettings, meta: dict) -> list[dict]:
    before = _ratio(records[0]["seq_kl_sum"], records[0]["seq_tokens"])
    rows = []
    for r in records:
        after = _ratio(r["seq_kl_sum"], r["seq_tokens"])
        frac = (before - after) / before if before > 0 else float("nan")
        rows.append(dict(meta, protocol=protocol, base_protocol=HEALED[protocol], layer_i=v.layer_i, layer_j=v.layer_j,
                         heal_steps=int(r["step"]), steps=settings.steps, seed=settings.seed,
                         final=r["step"] == settings.steps, kl_before=before, kl_after=after, fraction_recovered=frac,
                         seq_kl_sum=np.asarray(r["seq_kl_sum"], dtype=np.float64).tolist(),
                         seq_tokens=np.asarray(r["seq_tokens"], dtype=np.int64).tolist()))
    return rows


def add_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """``gap_before`` / ``gap_after`` on the rows of pairs healed under both replacement directions and
    interchange: ``max(d_repl(i<-j), d_repl(j<-i)) - d_inter`` at step 0 and at the row's step count."""
    df = df.copy()
    df["gap_before"] = np.nan
    df["gap_after"] = np.nan
    pair = df[df["protocol"] != "healed_deletion"]
    key = pair.apply(lambda r: (min(r.layer_i, r.layer_j), max(r.layer_i, r.layer_j), r.heal_steps), axis=1)
    for (i, j, s), g in pair.groupby(key):
        rep, inter = g[g["protocol"] == "healed_replacement"], g[g["protocol"] == "healed_interchange"]
        if len(rep) == 2 and len(inter) == 1:
            df.loc[g.index, "gap_before"] = rep["kl_before"].max() - inter["kl_before"].iloc[0]
            df.loc[g.index, "gap_after"] = rep["kl_after"].max() - inter["kl_after"].iloc[0]
    return df


def check_disjoint(calibration: TrainText, data) -> None:
    """The calibration text must not be the probe windows' source."""

    if data.tokens:
        raise SwapKLError(f"probe windows from a token file ({data.tokens}) cannot be checked to be disjoint from "
                          "the calibration text; probe text (a text file or a dataset split) instead")
    if calibration.source_key() == data.source_key():
        raise SwapKLError(f"the calibration text {calibration.describe()} is the probe windows' source "
                          f"{data.describe()}: healing must not see the probe windows; use another file or split")


def run_healed_probe(job: HealedProbeJob) -> pd.DataFrame:
    """Heal the selected variants of one checkpoint and write ``out`` (see the module docstring): a
    :class:`~swapkl.recovery.healed_jobs.HealedProbeJob` (``run_healed_probe(job)``), whose fields say
    what each option does."""
    job = HealedProbeJob.checked(job)
    model, probe_files, out, data, calibration, settings = (job.model, list(job.probe_files), job.out, job.data,
                                                            job.calibration, job.settings)
    protocols, selection, k, select_seed, curve_steps = job.protocols, job.selection, job.k, job.select_seed, \
        job.curve_steps
    revision, label, revision_label = job.revision, job.label, job.revision_label
    dtype, device, batch_size = job.dtype, job.device, job.batch_size
    unknown = sorted(set(protocols) - set(HEALED))
    if unknown or not protocols:
        raise SwapKLError(f"unknown healed protocols {unknown}: choose from {', '.join(HEALED)}")
    check_disjoint(calibration, data)
    check_writable(out)
    loaded = load_model(model, revision, dtype=dtype, device=device)
    windows = load_windows(data, loaded.tokenizer)
    probe = pd.concat([read_frame(p, PROBE_SCHEMA, "probe") for p in probe_files], ignore_index=True)
    for p in probe_files:
        prov = provenance.read(p)
        if prov.get("weights_sha256") != loaded.weights_sha256 or prov.get("tokens_sha256") != windows.sha256:
            raise SwapKLError(f"probe table {p!r} was measured on other weights or other windows than {model!r} "
                              f"with these probe data")
    n_layers = int(probe["n_layers"].iloc[0])
    pairs, blocks = select(probe, list(protocols), selection, k, select_seed)
    chunks = train_chunks(calibration, loaded.tokenizer, settings.seq_len, get_adapter(loaded.model).max_positions)
    rev = revision_label or loaded.revision or "main"
    meta = dict(model=label or loaded.model_id, revision=rev, step=step_of(rev), n_layers=n_layers)
    rows = []
    for protocol, v in variants_to_heal(pairs, blocks, list(protocols), n_layers):
        records = heal_variant(loaded.model, v, chunks, settings, windows, curve_steps=curve_steps,
                               batch_size=batch_size, device=loaded.device)
        rows += _rows(protocol, v, records, settings, meta)
    df = add_gaps(pd.DataFrame(rows))
    prov = provenance.build(loaded, windows, heal=dataclasses.replace(settings, loss="kl").as_dict(), calibration=calibration.as_dict(),
                            calibration_chunks=int(len(chunks)), selection=selection, k=int(k),
                            select_seed=int(select_seed), selected_pairs=[list(p) for p in pairs],
                            selected_blocks=blocks, protocols=list(protocols), curve_steps=sorted(curve_steps),
                            probe_files=list(probe_files), data_spec=data.as_dict())
    write_parquet(df, out, prov)
    return df
