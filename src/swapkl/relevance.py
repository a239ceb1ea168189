"""Accuracy-based layer relevance (AccRel), computed by the probe engine.

For a task D with random baseline r(D), the relevance of block l is

    AccRel(l, D) = 1 - max(acc(f_-l, D) - r(D), 0) / max(acc(f, D) - r(D), 0),

undefined (NaN here) when the full model f is not above chance. It is 0 for a block whose
deletion costs nothing, 1 for one whose deletion brings the model down to chance, and negative
when deleting the block *improves* accuracy.

Scoring runs on the engine: each batch of requests gets one base pass, and every single-block
deletion (or any other set of removed blocks) resumes from the first slot it changes, so no variant
model is ever built. Two kinds of data:

* multiple-choice tasks (:mod:`swapkl.tasks`): the log-likelihood of each choice is minus the sum of the
  engine's next-token NLL over the choice's tokens (the one NLL of :mod:`swapkl.kl`); ``acc`` and
  ``acc_norm`` as lm-eval defines them. Tokenisation follows lm-eval's ``HFLM``: trailing spaces of
  the context move to the continuation, ``context + continuation`` is encoded whole and the
  continuation is what follows the context's own encoding;
* language-modelling windows (:mod:`swapkl.data`): next-token accuracy, the share of positions whose
  greedy (argmax) prediction is the next token; random baseline 1 / vocabulary size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from swapkl.errors import SwapKLError
from swapkl.schemas import RELEVANCE_COLUMNS, read_table
from swapkl.kl import next_token_hits as _hits
from swapkl.kl import next_token_nll
from swapkl.pairs import Variant, deletion

BASE = "base"


def acc_rel(accuracy: float, base_accuracy: float, random_baseline: float) -> float:
    """AccRel of a variant with ``accuracy``; NaN when the base model is not above chance."""
    denom = max(base_accuracy - random_baseline, 0.0)
    if denom == 0.0:
        return math.nan
    return 1.0 - max(accuracy - random_baseline, 0.0) / denom


# -- multiple choice -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    doc: int
    choice: int
    context: str
    continuation: str
    tokens: tuple[int, ...]  # context tokens + continuation tokens
    n_continuation: int


def _encode(tokenizer, text: str) -> list[int]:
    """lm-eval HFLM's ``tok_encode``: the tokenizer's defaults, but no special tokens added when the text
    already starts with the prefix token (BOS, else EOS) as decoded text."""
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is not None and text.startswith(tokenizer.decode(prefix)):
        return list(tokenizer.encode(text, add_special_tokens=False))
    return list(tokenizer.encode(text))


def make_request(tokenizer, doc: int, choice: int, context: str, continuation: str, max_positions: int | None,
                 task: str) -> Request:
    """One (context, continuation) request, tokenised as lm-eval's ``HFLM`` does."""
    raw_context, raw_continuation = context, continuation
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    if not context:
        raise SwapKLError(f"task {task!r} document {doc}: the context is blank")
    whole = _encode(tokenizer, context + continuation)
    n_ctx = len(_encode(tokenizer, context))
    n_cont = len(whole) - n_ctx
    if n_cont < 1 or n_ctx < 1:
        raise SwapKLError(f"task {task!r} document {doc} choice {choice}: the continuation has no tokens of its own")
    if max_positions is not None and len(whole) - 1 > max_positions:
        raise SwapKLError(f"task {task!r} document {doc} choice {choice}: {len(whole)} tokens exceed the model's "
                          f"{max_positions} positions")
    return Request(doc, choice, raw_context, raw_continuation, tuple(whole), n_cont)


def task_requests(task, tokenizer, max_positions: int | None) -> list[Request]:
    """The (context, continuation) requests of every choice of every document, tokenised."""
    return [make_request(tokenizer, d, c, doc.context, task.target_delimiter + choice, max_positions, task.name)
            for d, doc in enumerate(task.docs) for c, choice in enumerate(doc.choices)]


def _batch(requests: list[Request], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask, and the mask of positions that predict a continuation token.

    The last token is never fed forward for its own prediction, exactly like lm-eval's input of
    ``(context + continuation)[:-1]``; here it is fed but no position's loss uses it.
    """
    width = max(len(r.tokens) for r in requests)
    ids = torch.full((len(requests), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    cont = torch.zeros(len(requests), width, dtype=torch.bool)
    for b, r in enumerate(requests):
        n = len(r.tokens)
        ids[b, :n] = torch.tensor(r.tokens)
        mask[b, :n] = 1
        cont[b, n - 1 - r.n_continuation: n - 1] = True  # position t predicts token t + 1
    return ids.to(device), mask.to(device), cont.to(device)


@torch.inference_mode()
def choice_loglikelihoods(engine, requests: list[Request], variants: list[Variant], *, batch_size: int = 16,
                          pad_id: int = 0) -> dict[str, np.ndarray]:
    """Log-likelihood of every request's continuation, for the base model and each variant (float64)."""
    device = engine.unemb.weight.device
    ordered = engine.plan(list(variants))
    out = {BASE: np.empty(len(requests))} | {v.key: np.empty(len(requests)) for v in ordered}
    by_length = sorted(range(len(requests)), key=lambda k: -len(requests[k].tokens))  # less padding per batch
    for start in range(0, len(by_length), batch_size):
        idx = by_length[start: start + batch_size]
        ids, mask, cont = _batch([requests[k] for k in idx], pad_id, device)
        state = engine.base_pass(ids, mask, targets=False)
        where = cont[mask.bool()]
        labels = state.targets.labels[where]
        seq = state.token_seq[where]

        def ll(h):
            # only the continuation's positions are unembedded
            nll = next_token_nll(engine.unemb, engine.adapter.final_norm(h)[mask.bool()][where], labels,
                                 engine.chunk_tokens)
            if not torch.isfinite(nll).all():
                raise SwapKLError("non-finite logits while scoring choices")
            s = torch.zeros(len(idx), dtype=torch.float64, device=device)
            return (-s.index_add_(0, seq, nll)).cpu().numpy()

        out[BASE][idx] = ll(state.residuals[-1])
        for v in ordered:
            out[v.key][idx] = ll(engine.final_hidden(state, v))
    return out


def per_document(task, requests: list[Request], lls: np.ndarray) -> list[list[float]]:
    """Request log-likelihoods regrouped as one list of choice scores per document."""
    per_doc: list[list[float]] = [[math.nan] * len(d.choices) for d in task.docs]
    for r, x in zip(requests, lls):
        per_doc[r.doc][r.choice] = float(x)
    return per_doc


def choice_predictions(task, requests: list[Request], lls: np.ndarray) -> dict[str, np.ndarray]:
    """Per-document ``acc`` and ``acc_norm`` (0/1 float arrays) from request log-likelihoods."""
    per_doc = per_document(task, requests, lls)
    acc = np.empty(len(task.docs))
    acc_norm = np.empty(len(task.docs))
    for d, doc in enumerate(task.docs):
        x = np.asarray(per_doc[d])
        lengths = np.array([float(len(c)) for c in doc.choices])
        acc[d] = float(np.argmax(x) == doc.gold)
        acc_norm[d] = float(np.argmax(x / lengths) == doc.gold)
    return {"acc": acc, "acc_norm": acc_norm}


# -- language modelling ---------------------------------------------------------------------------------------

@torch.inference_mode()
def next_token_hits(engine, windows, variants: list[Variant], *, batch_size: int = 8) -> dict[str, np.ndarray]:
    """Per-position 0/1 greedy hits (valid positions with a next token), base and each variant."""
    device = engine.unemb.weight.device
    ordered = engine.plan(list(variants))
    out: dict[str, list[np.ndarray]] = {BASE: []} | {v.key: [] for v in ordered}
    ids_all = torch.as_tensor(windows.input_ids)
    mask_all = torch.as_tensor(windows.attention_mask)
    for start in range(0, ids_all.shape[0], batch_size):
        ids = ids_all[start: start + batch_size].to(device)
        mask = mask_all[start: start + batch_size].to(device)
        state = engine.base_pass(ids, mask, targets=False)
        labels = state.targets.labels
        has = labels >= 0

        def score(h):
            hv = engine.adapter.final_norm(h)[state.valid][has]  # only positions with a next token
            return _hits(engine.unemb, hv, labels[has], engine.chunk_tokens).cpu().numpy().astype(np.float64)

        out[BASE].append(score(state.residuals[-1]))
        for v in ordered:
            out[v.key].append(score(engine.final_hidden(state, v)))
    return {k: np.concatenate(v) for k, v in out.items()}


# -- the relevance table ---------------------------------------------------------------------------------------



def deletion_variants(n_layers: int) -> list[Variant]:
    return [deletion(i, n_layers) for i in range(n_layers)]


def relevance_rows(model: str, revision: str | None, task: str, metric: str, scores: dict[str, np.ndarray],
                   n_layers: int, random_baseline: float) -> list[dict]:
    """One row per deleted block from per-item 0/1 scores of the base model and each deletion."""
    base = float(scores[BASE].mean())
    rows = []
    for layer in range(n_layers):
        acc = float(scores[deletion(layer, n_layers).key].mean())
        rows.append(dict(model=model, revision=revision, task=task, metric=metric, layer=layer, accuracy=acc,
                         base_accuracy=base, random_baseline=random_baseline,
                         relevance=acc_rel(acc, base, random_baseline), n_items=int(len(scores[BASE]))))
    return rows


@dataclass
class TaskScores:
    rows: list[dict]  # relevance rows, acc and acc_norm
    predictions: dict[str, dict[str, np.ndarray]]  # variant key -> metric -> per-document 0/1
    loglikelihoods: dict[str, list[list[float]]]  # variant key -> per-document choice scores


def task_relevance(engine, task, tokenizer, *, model: str, revision: str | None, batch_size: int = 16,
                   pad_id: int = 0) -> TaskScores:
    """Relevance of every block on one multiple-choice task, with the per-document scores behind it."""
    n = engine.n_layers
    requests = task_requests(task, tokenizer, engine.adapter.max_positions)
    lls = choice_loglikelihoods(engine, requests, deletion_variants(n), batch_size=batch_size, pad_id=pad_id)
    per_variant = {k: choice_predictions(task, requests, x) for k, x in lls.items()}
    rows = []
    for metric in ("acc", "acc_norm"):
        scores = {k: p[metric] for k, p in per_variant.items()}
        rows += relevance_rows(model, revision, task.name, metric, scores, n, task.random_baseline)
    return TaskScores(rows, per_variant, {k: per_document(task, requests, x) for k, x in lls.items()})


def lm_relevance(engine, windows, name: str, *, model: str, revision: str | None, batch_size: int = 8) -> list[dict]:
    """Relevance rows of every block on language-modelling windows (next-token accuracy)."""
    n = engine.n_layers
    hits = next_token_hits(engine, windows, deletion_variants(n), batch_size=batch_size)
    return relevance_rows(model, revision, name, "next_token_acc", hits, n, 1.0 / engine.adapter.vocab_size)


def run_relevance(model: str, task_files: list[str], out: str, *, revision: str | None = None, lm_data=None,
                  lm_name: str = "lm", label: str | None = None, revision_label: str | None = None, dtype: str = "float32", device: str = "auto",
                  batch_size: int = 16, chunk_tokens: int = 2048, allow_pickle: bool = False,
                  trust_remote_code: bool = False, harness_tasks: list[str] = (), lm_sets: dict | None = None) -> None:
    """Relevance of every block of one checkpoint on each task (and LM data), into one Parquet file.

    ``harness_tasks``: task names lm-eval loads (:mod:`swapkl.harness_tasks`, hub datasets); ``lm_sets``:
    further language-modelling data by task name (``{name: DataSpec}``), like ``lm_data`` under ``lm_name``."""
    import pandas as pd

    from swapkl import provenance
    from swapkl.data import check_windows, load_windows
    from swapkl.engine import ProbeEngine
    from swapkl.loading import load_model
    from swapkl.parquet_io import check_writable, write_parquet
    from swapkl.tasks import load_task

    lm_sets = dict(lm_sets or {})
    if lm_data is not None:
        if lm_name in lm_sets:
            raise SwapKLError(f"task names repeat: {lm_name!r} names the LM data and one of the LM sets")
        lm_sets = {lm_name: lm_data} | lm_sets
    if not task_files and not harness_tasks and not lm_sets:
        raise SwapKLError("no task given: name task YAML files, lm-eval task names and/or language-modelling data")
    tasks = [load_task(p) for p in task_files]
    hub_tasks = []
    if harness_tasks:
        from swapkl.harness_tasks import load_harness_tasks

        hub_tasks = load_harness_tasks(list(harness_tasks))
    names = [t.name for t in tasks] + [t.name for t in hub_tasks] + list(lm_sets)
    if len(set(names)) != len(names):
        raise SwapKLError(f"task names repeat: {names}")
    check_writable(out)
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code)
    if (tasks or hub_tasks) and loaded.tokenizer is None:
        raise SwapKLError(f"model {model!r} has no tokenizer; multiple-choice tasks need one")
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    label = label or loaded.model_id
    revision = revision_label or loaded.revision
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer is not None and loaded.tokenizer.pad_token_id is not None \
        else 0
    rows = []
    for t in tasks:
        rows += task_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                               batch_size=batch_size, pad_id=pad).rows
    for t in hub_tasks:
        from swapkl.harness_tasks import harness_relevance

        rows += harness_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                                  batch_size=batch_size, pad_id=pad)[0]
    windows, lm_prov = None, {}
    for name, spec in lm_sets.items():
        windows = load_windows(spec, loaded.tokenizer)
        check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
        rows += lm_relevance(engine, windows, name, model=label, revision=revision, batch_size=batch_size)
        lm_prov[name] = spec.as_dict() | {"source": windows.source, "tokens_sha256": windows.sha256}
    df = pd.DataFrame(rows, columns=RELEVANCE_COLUMNS)
    task_prov = {t.name: {"yaml": t.yaml_path, "data": t.data_path, "n_docs": len(t.docs)} for t in tasks}
    task_prov |= {t.name: {"lm_eval_task": t.name, "n_docs": len(t.docs)} for t in hub_tasks}
    prov = provenance.build(loaded, windows if len(lm_sets) == 1 else None, tasks=task_prov,
                            n_layers=engine.n_layers, layer_evals=engine.layer_evals,
                            lm_data=None if lm_data is None else lm_data.as_dict(), lm_sets=lm_prov)
    write_parquet(df, out, prov)


def aggregate_relevance(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint relevance files into one table (provenance: each input's, in order)."""
    import pandas as pd

    from swapkl import provenance
    from swapkl.parquet_io import write_parquet

    frames, provs = [], []
    for path in inputs:
        table, prov = read_table(path, RELEVANCE_COLUMNS, "relevance")
        provs.append(prov)
        frames.append(table.select(RELEVANCE_COLUMNS).to_pandas())
    if not frames:
        raise SwapKLError("no relevance file to aggregate")
    df = pd.concat(frames, ignore_index=True).sort_values(["model", "revision", "task", "metric", "layer"])
    if df.duplicated(["model", "revision", "task", "metric", "layer"]).any():
        raise SwapKLError("relevance files overlap: the same model, revision, task and layer appear twice")
    write_parquet(df.reset_index(drop=True), out, provenance.software_versions() | {"inputs": provs})
