"""Recovery after pruning: heal exported pruned checkpoints and the unpruned control, score them all.

Net recovery, as the published recovery experiment defines it (the fraction of the pruning-specific
damage that the heal removes once the control's domain adaptation is accounted for):

    net_recovery = 1 - (PPL_healed - PPL_control) / (PPL_pruned - PPL_base)

with ``PPL_base`` the unpruned model, ``PPL_control`` the unpruned model after the same heal, ``PPL_pruned``
the pruned model and ``PPL_healed`` the pruned model after the heal (a fraction; the paper prints it in
percent). It is undefined (NaN) when pruning did not raise the perplexity.

Every phase is scored on the same evaluation windows, and the table keeps each row's per-window NLL sums
(``window_nll_sum``, ``window_tokens``): :func:`recovery_intervals` resamples those windows once for all rows of a
checkpoint, so the 95% percentile intervals of ``delta_ppl_pct`` (pruned against the base, healed against the
control) and of ``net_recovery`` are paired across the four phases.

A healed checkpoint is written the way :mod:`swapkl.export` writes one: the merged weights (adapters folded
in), ``config.json``, the tokenizer files of its source, and ``swapkl_heal.json`` (source, settings, training
text, per-step losses, the reload check); it is reloaded with ``AutoModelForCausalLM`` and its logits compared
with the in-memory trained model's before it appears under its final name.
"""

from __future__ import annotations

import copy
import json
import logging
import os

import numpy as np
import pandas as pd
import torch

from swapkl.errors import SwapKLError
from swapkl.stats.bootstrap import boot_log_ppl, percentile_ci, resample_indices
from swapkl.adapters import get_adapter
from swapkl.export import HEAL_FILE, PROVENANCE_FILE as EXPORT_FILE, check_tokens, copy_side_files
from swapkl.recovery.heal import merged, prepare_trainable, train, train_chunks
from swapkl.recovery.heal_settings import HealSettings, TrainText, settings_from
from swapkl.recovery.recovery_jobs import RecoveryJob
from swapkl.recovery.heal_scores import kl_to_base, model_perplexity, task_accuracies
from swapkl.relevance.tasks import acc_rel
from swapkl.tables import provenance
from swapkl.tables.staging import Staging
from swapkl.data.windows import load_windows
from swapkl.model.loading import load_model, tokenizer_files
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.pruning.perplexity import load_eval_windows
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.relevance.tasks import load_task

log = logging.getLogger(__name__)

PHASES = ("base", "control", "pruned", "healed")
COLUMNS = ("model", "revision", "guide", "budget", "removed_layers", "phase", "ppl", "delta_ppl_pct",
           "delta_ppl_pct_ci_low", "delta_ppl_pct_ci_high", "kl", "task_accuracy", "task_relevance", "net_recovery",
           "net_recovery_ci_low", "net_recovery_ci_high", "steps", "seed", "checkpoint", "window_nll_sum",
           "window_tokens")
#: bootstrap resamples of the evaluation windows behind the intervals, and their seed
N_BOOT, SEED = 1000, 0


def net_recovery(ppl_base: float, ppl_control: float, ppl_pruned: float, ppl_healed: float) -> float:
    """See the module docstring."""
    damage = ppl_pruned - ppl_base
    if not damage > 0:
        return float("nan")
    return 1.0 - (ppl_healed - ppl_control) / damage


def merge_tolerance(dtype: torch.dtype, scale: float) -> float:
    """Largest |logit difference| accepted between a merged, reloaded model and the trained model in memory.

    Merging replaces ``W x + s B (A x)`` by ``(W + s B A) x``: the same products summed in another order and the
    merged weight rounded once more, a relative change of a few ``eps`` per output of every adapted
    projection. Through the blocks such changes add up rather than cancel, so the bound allows ten times the
    export's reassociation bound (1e-5 of the logit scale): 1e-4 in float32, ``64 eps`` in half types. In
    half precision the merged weight is rounded to 8 (bfloat16) or 11 (float16) bits, a change of the size of
    the adapters' own contribution for small updates, so there the check catches a wrong or misplaced weight,
    not the rounding; train and merge in float32 where the healed weights must match the adapters closely.
    """
    rel = 1e-4 if dtype == torch.float32 else 64 * torch.finfo(dtype).eps
    return rel * max(1.0, scale)


def recovery_intervals(rows: list[dict], tokens: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED) -> list[dict]:
    """``rows`` (one checkpoint's: a base, a control, and pruned and healed rows paired in that order) with the 95%
    percentile intervals of ``delta_ppl_pct`` and ``net_recovery``, from one resampling of the evaluation windows
    shared by every row (each row's ``window_nll_sum`` over ``tokens``): the base and control rows' delta is 0 by
    definition; a resample in which pruning does not raise the perplexity leaves net recovery undefined there."""
    idx = resample_indices(len(tokens), n_boot, seed)
    ppl = [np.exp(boot_log_ppl(r["window_nll_sum"], tokens, idx)) for r in rows]
    phase = {r["phase"]: k for k, r in enumerate(rows) if r["phase"] in ("base", "control")}
    out, pruned = [], None
    for k, r in enumerate(rows):
        r = dict(r)
        if r["phase"] in ("base", "control"):
            r["delta_ppl_pct_ci_low"], r["delta_ppl_pct_ci_high"] = 0.0, 0.0
            r["net_recovery_ci_low"] = r["net_recovery_ci_high"] = float("nan")
        else:
            ref = ppl[phase["base" if r["phase"] == "pruned" else "control"]]
            r["delta_ppl_pct_ci_low"], r["delta_ppl_pct_ci_high"] = percentile_ci(100.0 * (ppl[k] / ref - 1.0))
            if r["phase"] == "pruned":
                pruned = ppl[k]
                r["net_recovery_ci_low"] = r["net_recovery_ci_high"] = float("nan")
            else:
                damage = pruned - ppl[phase["base"]]
                with np.errstate(invalid="ignore", divide="ignore"):
                    net = np.where(damage > 0, 1.0 - (ppl[k] - ppl[phase["control"]]) / damage, np.nan)
                r["net_recovery_ci_low"], r["net_recovery_ci_high"] = percentile_ci(net)
        out.append(r)
    return out


@torch.inference_mode()
def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids, use_cache=False).logits.float()


def save_healed(trained, source_dir: str, out: str, provenance: dict):
    """Merge ``trained``, write it to ``out`` (new), reload it and check its logits; return the reloaded model."""
    from transformers import AutoModelForCausalLM

    if os.path.lexists(out):
        raise SwapKLError(f"{out!r} already exists; healed checkpoints go into a new directory")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    base = trained.get_base_model() if hasattr(trained, "get_base_model") else trained
    ids = check_tokens(base.config.vocab_size, getattr(base.config, "max_position_embeddings", None))
    ids = ids.to(next(trained.parameters()).device)
    ref = _logits(trained, ids)
    model = merged(trained)
    staging = Staging(out)
    tmp = staging.path
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        copied = copy_side_files(source_dir, tmp, tokenizer_files(source_dir, model.config.model_type))
        reloaded = AutoModelForCausalLM.from_pretrained(tmp, dtype=model.dtype).to(ids.device).eval()
        got = _logits(reloaded, ids)
        diff = float((got - ref).abs().max())
        tol = merge_tolerance(model.dtype, float(ref.abs().max()))
        if not diff <= tol:
            raise SwapKLError(f"the merged, reloaded healed model's logits differ from the trained model's by "
                              f"{diff:.3g} (tolerance {tol:.3g})")
        prov = dict(provenance, copied_files=copied, verification={"max_abs_logit_diff": diff,
                                                                   "logit_tolerance": tol})
        with open(os.path.join(tmp, HEAL_FILE), "w") as f:
            json.dump(prov, f, indent=2, sort_keys=True, default=str)
        staging.commit(out)
    except BaseException:
        staging.discard()  # our own staging directory only
        raise
    return reloaded


def heal_loaded(loaded, out: str, settings: HealSettings, text: TrainText, *, teacher=None, extra: dict | None = None,
                chunks: np.ndarray | None = None):
    """Heal a loaded checkpoint (its model is changed in place), save and verify it; return (reloaded, losses).
    ``chunks``: the training chunks of ``text`` when already cut with this checkpoint's tokenizer."""
    if chunks is None:
        chunks = train_chunks(text, loaded.tokenizer, settings.seq_len, get_adapter(loaded.model).max_positions)
    trainable = prepare_trainable(loaded.model, settings)
    losses = train(trainable, chunks, settings, teacher=teacher, desc=f"heal {os.path.basename(out)}")
    prov = provenance.build(loaded, source_path=loaded.path, heal=settings.as_dict(), train_text=text.as_dict(),
                            train_chunks=int(len(chunks)), losses=losses, **(extra or {}))
    return save_healed(trainable, loaded.path, out, prov), losses


def read_export(path: str) -> dict:
    """The provenance swapkl export wrote next to a pruned checkpoint."""
    f = os.path.join(path, EXPORT_FILE)
    if not os.path.isfile(f):
        raise SwapKLError(f"{path!r} has no {EXPORT_FILE}: pass checkpoints written by swapkl export")
    with open(f) as fh:
        return json.load(fh)


class Scorer:
    """The evaluators every phase's model goes through: perplexity on the held-out text, KL to the base on
    the probe windows (when given) and accuracy on the multiple-choice tasks (when given)."""

    def __init__(self, base, ew, windows, tasks, tokenizer, batch_size: int, device: str):
        self.base, self.ew, self.windows, self.tasks = base, ew, windows, tasks
        self.tokenizer, self.batch_size, self.device = tokenizer, batch_size, device
        self.base_acc = task_accuracies(base, tokenizer, tasks) if tasks else []

    def __call__(self, model) -> dict:
        nll, tokens = model_perplexity(model, self.ew, batch_size=self.batch_size, device=self.device)
        kl = float("nan")
        if self.windows is not None:
            sums, n = kl_to_base(self.base, [model], self.windows.input_ids, self.windows.attention_mask,
                                 batch_size=self.batch_size, device=self.device)
            kl = float(sums[0].sum() / n.sum())
        acc = task_accuracies(model, self.tokenizer, self.tasks) if self.tasks else []
        rel = [acc_rel(a, b, t.random_baseline) for a, b, t in zip(acc, self.base_acc, self.tasks)]
        return dict(ppl=float(np.exp(nll.sum() / tokens.sum())), kl=kl, window_nll_sum=nll.tolist(),
                    window_tokens=np.asarray(tokens).astype(np.int64).tolist(),
                    task_accuracy=float(np.mean(acc)) if acc else float("nan"),
                    task_relevance=float(np.nanmean(rel)) if acc and not np.isnan(rel).all() else float("nan"))


def _delta(ppl: float, ref: float) -> float:
    return 100.0 * (ppl / ref - 1.0)


def _heal_control(loaded_base, healed_dir, settings, text, chunks):
    """The unpruned control: the same heal on a copy of the base model."""
    control = copy.copy(loaded_base)
    control.model = copy.deepcopy(loaded_base.model)
    model, _ = heal_loaded(control, os.path.join(healed_dir, "control"), settings, text,
                           extra={"phase": "control"}, chunks=chunks)
    return model


def _sources(exports: list[str], budgets, weights_sha256: str, base: str) -> list[tuple[str, dict]]:
    sources = [(path, read_export(path)) for path in exports]
    if budgets is not None:
        sources = [(p, prov) for p, prov in sources if len(prov["removed_layers"]) in set(budgets)]
        if not sources:
            raise SwapKLError(f"no exported model removes {sorted(budgets)} blocks")
    for path, prov in sources:
        if prov.get("weights_sha256") != weights_sha256:
            raise SwapKLError(f"export {path!r} was not cut from the weights of {base!r} (source sha256 differs)")
    return sources


def run_recovery(job: RecoveryJob) -> pd.DataFrame:
    """Heal every exported pruned checkpoint of a :class:`~swapkl.recovery.recovery_jobs.RecoveryJob`'s ``model``
    and the unpruned control (``run_recovery(job)``); write the recovery table.

    The job's ``budgets`` keeps the exports that remove that many blocks (None: all). Each export must have been
    cut from exactly these base weights (its recorded source sha256). Healed checkpoints go to
    ``healed_dir/control`` and ``healed_dir/<export folder name>`` (``healed_dir`` new or empty).
    """
    job = RecoveryJob.checked(job)
    labels = dict(job.metadata or {})
    return recover(job.model, export_folders(job.exports_dir), job.out, job.healed_dir, settings_from(**job.settings),
                   TrainText(**job.train), job.eval_data, revision=job.revision, probe_data=job.probe_data,
                   task_files=job.task_files, model_name=labels.get("model"), revision_label=labels.get("revision"),
                   budgets=job.budgets, dtype=job.dtype, device=job.device, batch_size=job.batch_size,
                   load=dict(allow_pickle=job.allow_pickle, trust_remote_code=job.trust_remote_code,
                             **(job.placement or {})))


def recover(base: str, exports: list[str], out: str, healed_dir: str, settings: HealSettings, text: TrainText,
            eval_spec, *, revision: str | None = None, probe_data=None, task_files=(),
            model_name: str | None = None, revision_label: str | None = None, budgets: list[int] | None = None,
            dtype: str = "float32", device: str = "auto", batch_size: int = 8, load: dict | None = None) -> pd.DataFrame:
    """:func:`run_recovery` on the checkpoints ``exports`` of ``base`` (``load``: further keyword arguments of the
    base model's loading)."""
    check_writable(out)
    if os.path.lexists(healed_dir) and (not os.path.isdir(healed_dir) or os.listdir(healed_dir)):
        raise SwapKLError(f"{healed_dir!r} already exists and is not empty; healed checkpoints go into a new one")
    tasks = [load_task(f) for f in task_files]
    lb = load_model(base, revision, dtype=dtype, device=device, **(load or {}))
    sources = _sources(exports, budgets, lb.weights_sha256, base)
    ew = load_eval_windows(EvalSpec.from_dict(eval_spec), lb.tokenizer, getattr(lb.model.config,
                                                                               "max_position_embeddings", None))
    windows = None if probe_data is None else load_windows(probe_data, lb.tokenizer)
    score = Scorer(lb.model, ew, windows, tasks, lb.tokenizer, batch_size, lb.device)
    row = dict(model=model_name or lb.model_id, revision=revision_label or lb.revision or "main",
               steps=settings.steps, seed=settings.seed, guide=None, budget=0, removed_layers=[])
    # every export shares the base's tokenizer, and has the base's positions
    chunks = train_chunks(text, lb.tokenizer, settings.seq_len, get_adapter(lb.model).max_positions)
    base_scores = score(lb.model)
    rows = [dict(row, phase="base", **base_scores, delta_ppl_pct=0.0, net_recovery=float("nan"), checkpoint=lb.path)]
    control = score(_heal_control(lb, healed_dir, settings, text, chunks))
    rows.append(dict(row, phase="control", **control, delta_ppl_pct=0.0, net_recovery=float("nan"),
                     checkpoint=os.path.join(healed_dir, "control")))
    for path, prov in sources:
        pruned = load_model(path, None, dtype=dtype, device=device)
        if pruned.tokenizer_sha256 != lb.tokenizer_sha256:
            raise SwapKLError(f"export {path!r} has another tokenizer than {base!r}")
        removed = [int(b) for b in prov["removed_layers"]]
        common = dict(row, guide=prov.get("guide"), budget=len(removed), removed_layers=removed)
        before = score(pruned.model)
        rows.append(dict(common, phase="pruned", **before, delta_ppl_pct=_delta(before["ppl"], base_scores["ppl"]),
                         net_recovery=float("nan"), checkpoint=path))
        target = os.path.join(healed_dir, os.path.basename(os.path.normpath(path)))
        healed, _ = heal_loaded(pruned, target, settings, text, extra={"phase": "healed", "export": prov},
                                chunks=chunks)
        after = score(healed)
        rows.append(dict(common, phase="healed", **after, delta_ppl_pct=_delta(after["ppl"], control["ppl"]),
                         net_recovery=net_recovery(base_scores["ppl"], control["ppl"], before["ppl"], after["ppl"]),
                         checkpoint=target))
        del pruned, healed
    rows = recovery_intervals(rows, np.asarray(base_scores["window_tokens"], dtype=np.float64))
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    prov = provenance.build(lb, windows, heal=settings.as_dict(), train_text=text.as_dict(),
                            eval_data=EvalSpec.from_dict(eval_spec).as_dict(), eval_tokens=int(ew.n_scored),
                            n_boot=N_BOOT, bootstrap_seed=SEED,
                            exports=[p for p, _ in sources], tasks=[t.name for t in tasks])
    write_parquet(df, out, prov)
    return df


def export_folders(exports_dir: str) -> list[str]:
    """The checkpoints swapkl export wrote into ``exports_dir`` (folders with its provenance file), sorted."""
    if not os.path.isdir(exports_dir):
        raise SwapKLError(f"{exports_dir!r} is not a directory of exported checkpoints")
    out = sorted(os.path.join(exports_dir, n) for n in os.listdir(exports_dir)
                 if os.path.isfile(os.path.join(exports_dir, n, EXPORT_FILE)))
    if not out:
        raise SwapKLError(f"{exports_dir!r} holds no checkpoint written by swapkl export")
    return out
