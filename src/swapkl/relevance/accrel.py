"""Accuracy-based layer relevance (AccRel), computed by the probe engine.

For a task D with random baseline r(D), the relevance of block l is

    AccRel(l, D) = 1 - max(acc(f_-l, D) - r(D), 0) / max(acc(f, D) - r(D), 0),

undefined (NaN here) when the full model f is not above chance. It is 0 for a block whose
deletion costs nothing, 1 for one whose deletion brings the model down to chance, and negative
when deleting the block *improves* accuracy.

Scoring runs on the engine: each batch of requests gets one base pass, and every single-block
deletion (or any other set of removed blocks) resumes from the first slot it changes, so no variant
model is ever built. Two kinds of data:

* multiple-choice tasks (:mod:`swapkl.relevance.tasks`): the log-likelihood of each choice is minus the sum of the
  engine's next-token NLL over the choice's tokens (the one NLL of :mod:`swapkl.model.kl`); ``acc`` and
  ``acc_norm`` as lm-eval defines them. Tokenisation follows lm-eval's ``HFLM``: trailing spaces of
  the context move to the continuation, ``context + continuation`` is encoded whole and the
  continuation is what follows the context's own encoding;
* language-modelling windows (:mod:`swapkl.data.windows`): next-token accuracy, the share of positions whose
  greedy (argmax) prediction is the next token; random baseline 1 / vocabulary size.

Besides every single-block deletion, a run can score the pruned models a pruning study chose
(:class:`PrunedSet`, read from the checkpoint's pruning table by :func:`pruned_sets_from_table`): each
guide's removed set at each budget (LaCo's merged slots run the averaged block, as in the pruning
study), with AccRel of the pruned model ``f_-S`` in place of ``f_-l``. A :class:`Scan` holds the variants
of one run: identical models (the same set chosen by several guides, or a budget-1 set that is a
single-block deletion) are one variant, computed once and reported on each of their rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from swapkl.tables import provenance
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_distinct, require_regular_file
from swapkl.model.kl import next_token_hits as _hits
from swapkl.model.kl import next_token_nll
from swapkl.probes.pairs import Variant, deletion, removal_variant
from swapkl.tables.schemas import RELEVANCE_KEY, RELEVANCE_SCHEMA
from swapkl.model.batch_loop import BASE as SWEEP_BASE
from swapkl.model.batch_loop import Batch, sweep, window_batches

BASE = SWEEP_BASE.key  # the unmodified model's key in the score dictionaries


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


def request_batches(requests: list[Request], batch_size: int, pad_id: int, device):
    """(a generator of batches of ``requests``, longest first for less padding, rows as request indices; their
    number). Each batch reaches the device only when the sweep takes it."""
    by_length = sorted(range(len(requests)), key=lambda k: -len(requests[k].tokens))
    starts = range(0, len(by_length), batch_size)

    def batches():
        for start in starts:
            idx = by_length[start: start + batch_size]
            yield Batch(idx, *_batch([requests[k] for k in idx], pad_id, device))

    return batches(), len(starts)


@torch.inference_mode()
def choice_loglikelihoods(engine, requests: list[Request], variants: list[Variant], *, batch_size: int = 16,
                          pad_id: int = 0) -> dict[str, np.ndarray]:
    """Log-likelihood of every request's continuation, for the base model and each variant (float64)."""
    device = engine.unemb.weight.device
    out = {BASE: np.empty(len(requests))} | {v.key: np.empty(len(requests)) for v in variants}
    batches, n_batches = request_batches(requests, batch_size, pad_id, device)
    for m in sweep(engine, batches, variants, device=device, targets=False, n_batches=n_batches,
                   desc="choice log-likelihoods"):
        where = m.batch.scored[m.state.valid].to(engine.unemb.device)
        # only the continuation's positions are unembedded
        nll = next_token_nll(engine.unemb, engine.final_normed(m.hidden, m.state.valid)[where],
                             m.state.targets.labels[where], engine.chunk_tokens)
        if not torch.isfinite(nll).all():
            raise SwapKLError("non-finite logits while scoring choices")
        s = torch.zeros(len(m.batch.rows), dtype=torch.float64, device=nll.device)
        idx = m.state.token_seq.to(nll.device)[where]
        out[m.variant.key][m.batch.rows] = (-s.index_add_(0, idx, nll)).cpu().numpy()
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
    out: dict[str, list[np.ndarray]] = {BASE: []} | {v.key: [] for v in variants}
    batches = window_batches(windows.input_ids, windows.attention_mask, batch_size)
    for m in sweep(engine, batches, variants, device=engine.unemb.weight.device, targets=False,
                   desc="next-token accuracy"):
        labels = m.state.targets.labels
        has = labels >= 0
        hv = engine.final_normed(m.hidden, m.state.valid)[has]  # only positions with a next token
        out[m.variant.key].append(_hits(engine.unemb, hv, labels[has], engine.chunk_tokens).cpu().numpy()
                                  .astype(np.float64))
    return {k: np.concatenate(v) for k, v in out.items()}


# -- the relevance table ---------------------------------------------------------------------------------------

COLUMNS = RELEVANCE_SCHEMA.names


@dataclass(frozen=True)
class PrunedSet:
    """A pruning guide's choice at one budget (one row of a pruning table): the blocks it removes and, for
    LaCo, the slots whose block runs the average of itself and the next (removed) block."""

    guide: str
    budget: int
    removed: tuple[int, ...]
    merged: tuple[int, ...] = ()
    random_draw: int | None = None
    fixed_set: str | None = None

    def columns(self) -> dict:
        return dict(layer=None, guide=self.guide, budget=self.budget, random_draw=self.random_draw,
                    fixed_set=self.fixed_set, removed_layers=list(self.removed),
                    merged_layers=list(self.merged) if self.merged else None)


_NO_SET = dict(guide=None, budget=None, random_draw=None, fixed_set=None, merged_layers=None)


class Scan:
    """The models one relevance run scores: every single-block deletion and each :class:`PrunedSet`.

    ``variants`` holds each distinct block order once; ``merged_ids`` maps a LaCo merge ``(i, i + 1)``
    to the engine block id of its averaged block (:func:`scan_for` registers them)."""

    def __init__(self, n_layers: int, pruned_sets=(), merged_ids: dict | None = None):
        self.n_layers = n_layers
        by_order: dict[tuple, Variant] = {}
        self.entries = []  # (the row's identifying columns, key of its variant)
        for layer in range(n_layers):
            v = by_order.setdefault(deletion(layer, n_layers).order, deletion(layer, n_layers))
            self.entries.append((dict(layer=layer, removed_layers=[layer]), v.key))
        for s in pruned_sets:
            bad = [b for b in (*s.removed, *s.merged) if not 0 <= b < n_layers]
            if bad or not s.removed or len(set(s.removed)) != len(s.removed):
                raise SwapKLError(f"pruned set of guide {s.guide!r} at budget {s.budget} removes {list(s.removed)}: "
                                  f"not distinct blocks of this {n_layers}-block model")
            v = removal_variant(s.removed, n_layers)
            if s.merged:
                from swapkl.pruning.guides.registry import Pruned
                from swapkl.pruning.prune import pruned_variant

                v = pruned_variant(Pruned(s.removed, s.merged), n_layers, merged_ids or {})
                v = dataclasses.replace(v, protocol=f"removed{list(s.removed)}merged{list(s.merged)}")
            self.entries.append((s.columns(), by_order.setdefault(v.order, v).key))
        self.variants = list(by_order.values())
        self.n_distinct_sets = len(self.variants) - n_layers

    def rows(self, model: str, revision: str | None, task: str, metric: str, scores: dict[str, np.ndarray],
             random_baseline: float) -> list[dict]:
        """One row per scored model from per-item 0/1 scores of the base model and each variant."""
        base = float(scores[BASE].mean())
        rows = []
        for columns, key in self.entries:
            acc = float(scores[key].mean())
            rows.append(dict(model=model, revision=revision, task=task, metric=metric, accuracy=acc,
                             base_accuracy=base, random_baseline=random_baseline,
                             relevance=acc_rel(acc, base, random_baseline), n_items=int(len(scores[BASE])))
                        | _NO_SET | columns)
        return rows


@contextlib.contextmanager
def scan_for(engine, pruned_sets=()):
    """The :class:`Scan` of ``engine``'s model and ``pruned_sets``, with LaCo's averaged blocks registered
    while inside."""
    from swapkl.pruning.merge import merged_blocks

    with merged_blocks(engine, sorted({(i, i + 1) for s in pruned_sets for i in s.merged})) as ids:
        yield Scan(engine.n_layers, pruned_sets, ids)


def pruned_sets_from_table(path: str, *, n_layers: int, weights_sha256: str | None = None,
                           guides: list[str] | None = None, model: str | None = None) -> list[PrunedSet]:
    """Every pruned model of a checkpoint's pruning table: each feasible row with removed blocks (not the
    ``base`` row, not the ``random_mean`` summary), in the table's order; only those of ``guides`` if given.

    The table must describe a model of ``n_layers`` blocks and, where its provenance records the weights'
    hash, have been measured on the weights ``weights_sha256``."""
    from swapkl.tables.schemas import PRUNING_RUN_SCHEMA, read_table

    # a per-checkpoint file (swapkl prune) or the aggregated table: the run's columns are in both
    table, prov = read_table(path, PRUNING_RUN_SCHEMA, "pruning")
    df = table.to_pandas()
    if weights_sha256 is not None:
        own = provenance.require_made_from(path, prov, weights_sha256, model or path, "pruning table")
        if own is not None and "checkpoints" in prov:  # an aggregate holds other checkpoints: only this one's rows
            df = df[[(m, r) in own for m, r in zip(df["model"], df["revision"])]].reset_index(drop=True)
    sizes = sorted(set(df["n_layers"].dropna().astype(int)))
    if sizes != [n_layers]:
        raise SwapKLError(f"pruning table {path!r} describes models of {sizes} blocks, not {n_layers}")
    unknown = sorted(set(guides or ()) - set(df["guide"]))
    if unknown:
        raise SwapKLError(f"pruning table {path!r} has no guide {', '.join(unknown)} "
                          f"(it has {', '.join(sorted(set(df['guide'])))})")
    out = []
    for r in df.itertuples(index=False):
        if guides is not None and r.guide not in guides:
            continue
        if not r.feasible or r.removed_layers is None or len(r.removed_layers) == 0:
            continue
        merged = () if r.merged_layers is None else tuple(int(b) for b in r.merged_layers)
        out.append(PrunedSet(r.guide, int(r.budget), tuple(int(b) for b in r.removed_layers), merged,
                             None if _missing(r.random_draw) else int(r.random_draw),
                             None if _missing(r.fixed_set) else str(r.fixed_set)))
    return out


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


@dataclass
class TaskScores:
    rows: list[dict]  # relevance rows, acc and acc_norm
    predictions: dict[str, dict[str, np.ndarray]]  # variant key -> metric -> per-document 0/1
    loglikelihoods: dict[str, list[list[float]]]  # variant key -> per-document choice scores


def task_relevance(engine, task, tokenizer, *, model: str, revision: str | None, batch_size: int = 16,
                   pad_id: int = 0, scan: Scan | None = None) -> TaskScores:
    """Relevance of every block (and of each pruned set of ``scan``) on one multiple-choice task, with the
    per-document scores behind it."""
    scan = scan or Scan(engine.n_layers)
    requests = task_requests(task, tokenizer, engine.adapter.max_positions)
    lls = choice_loglikelihoods(engine, requests, scan.variants, batch_size=batch_size, pad_id=pad_id)
    per_variant = {k: choice_predictions(task, requests, x) for k, x in lls.items()}
    rows = []
    for metric in ("acc", "acc_norm"):
        scores = {k: p[metric] for k, p in per_variant.items()}
        rows += scan.rows(model, revision, task.name, metric, scores, task.random_baseline)
    return TaskScores(rows, per_variant, {k: per_document(task, requests, x) for k, x in lls.items()})


def lm_relevance(engine, windows, name: str, *, model: str, revision: str | None, batch_size: int = 8,
                 scan: Scan | None = None) -> list[dict]:
    """Relevance rows of every block (and of each pruned set of ``scan``) on language-modelling windows
    (next-token accuracy)."""
    scan = scan or Scan(engine.n_layers)
    hits = next_token_hits(engine, windows, scan.variants, batch_size=batch_size)
    return scan.rows(model, revision, name, "next_token_acc", hits, 1.0 / engine.adapter.vocab_size)


def run_relevance(model: str, task_files: list[str], out: str, *, revision: str | None = None, lm_data=None,
                  lm_name: str = "lm", label: str | None = None, revision_label: str | None = None, dtype: str = "float32", device: str = "auto",
                  batch_size: int = 8, chunk_tokens: int = 2048, allow_pickle: bool = False,
                  trust_remote_code: bool = False, harness_tasks: list[str] = (), lm_sets: dict | None = None,
                  pruning: str | None = None, pruning_guides: list[str] | None = None,
                  placement: dict | None = None) -> None:
    """Relevance of every block of one checkpoint on each task (and LM data), into one Parquet file.

    ``harness_tasks``: task names lm-eval loads (:mod:`swapkl.relevance.harness_tasks`, hub datasets); ``lm_sets``:
    further language-modelling data by task name (``{name: DataSpec}``), like ``lm_data`` under ``lm_name``;
    ``pruning``: this checkpoint's pruning table, whose guides' pruned models are scored too (only those of
    ``pruning_guides`` when given)."""
    import pyarrow as pa

    from swapkl.data.windows import check_windows, load_windows
    from swapkl.model.engine import ProbeEngine
    from swapkl.model.loading import load_model
    from swapkl.tables.parquet_io import check_writable, write_parquet
    from swapkl.relevance.tasks import load_task

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
        from swapkl.relevance.harness_tasks import load_harness_tasks

        hub_tasks = load_harness_tasks(list(harness_tasks))
    names = [t.name for t in tasks] + [t.name for t in hub_tasks] + list(lm_sets)
    if len(set(names)) != len(names):
        raise SwapKLError(f"task names repeat: {names}")
    require_distinct({"`out`": out}, [("`task_files`", t) for t in task_files] + [("`pruning`", pruning)])
    check_writable(out)
    if pruning is not None:
        require_regular_file(pruning, "pruning table")
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, **(placement or {}))
    if (tasks or hub_tasks) and loaded.tokenizer is None:
        raise SwapKLError(f"model {model!r} has no tokenizer; multiple-choice tasks need one")
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    label = label or loaded.model_id
    revision = revision_label or loaded.revision
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer is not None and loaded.tokenizer.pad_token_id is not None \
        else 0
    if pruning_guides is not None and pruning is None:
        raise SwapKLError("pruning guides name the guides of a pruning table; give the table too (`pruning`)")
    sets = [] if pruning is None else pruned_sets_from_table(pruning, n_layers=engine.n_layers,
                                                                weights_sha256=loaded.weights_sha256,
                                                                guides=pruning_guides, model=model)
    rows = []
    windows, lm_prov = None, {}
    with scan_for(engine, sets) as scan:
        for t in tasks:
            rows += task_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                                   batch_size=batch_size, pad_id=pad, scan=scan).rows
        for t in hub_tasks:
            from swapkl.relevance.harness_tasks import harness_relevance

            rows += harness_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                                      batch_size=batch_size, pad_id=pad, scan=scan)[0]
        for name, spec in lm_sets.items():
            windows = load_windows(spec, loaded.tokenizer)
            check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
            rows += lm_relevance(engine, windows, name, model=label, revision=revision, batch_size=batch_size,
                                 scan=scan)
            lm_prov[name] = spec.as_dict() | {"source": windows.source, "tokens_sha256": windows.sha256}
    task_prov = {t.name: {"yaml": t.yaml_path, "data": t.data_path, "n_docs": len(t.docs)} for t in tasks}
    task_prov |= {t.name: {"lm_eval_task": t.name, "n_docs": len(t.docs)} for t in hub_tasks}
    pruning_prov = None if pruning is None else {"path": pruning, "guides": pruning_guides or "all",
                                                 "n_pruned_sets": len(sets),
                                                 "n_distinct_pruned_models": scan.n_distinct_sets}
    prov = provenance.build(loaded, windows if len(lm_sets) == 1 else None, tasks=task_prov,
                            n_layers=engine.n_layers, layer_evals=engine.layer_evals,
                            lm_data=None if lm_data is None else lm_data.as_dict(), lm_sets=lm_prov,
                            pruning=pruning_prov, input_sha256=provenance.input_sha256(
                                [*(f for t in tasks for f in (t.yaml_path, t.data_path)), pruning]))
    write_parquet(pa.Table.from_pylist(rows, schema=RELEVANCE_SCHEMA), out, prov)


def aggregate_relevance(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint relevance files into one table (provenance: each input's, in order).

    Rows are sorted by model, revision, task, metric, then the single-block rows by layer and the
    pruned-set rows after them by guide, fixed set, budget and random draw."""
    import pyarrow as pa

    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import RELEVANCE_APPENDED, read_table

    require_distinct({"`out`": out}, [("`inputs`", p) for p in inputs])
    tables, provs = [], []
    for path in inputs:
        table, prov = read_table(path, RELEVANCE_SCHEMA, "relevance", appended=RELEVANCE_APPENDED)
        tables.append(table)
        provs.append(prov)
    if not tables:
        raise SwapKLError("no relevance file to aggregate")
    table = pa.concat_tables(tables)
    if table.to_pandas()[RELEVANCE_KEY].duplicated().any():
        raise SwapKLError("relevance files overlap: the same model, revision, task and scored model appear twice")
    order = ["model", "revision", "task", "metric", "layer", "guide", "fixed_set", "budget", "random_draw"]
    table = table.sort_by([(c, "ascending") for c in order])  # nulls last: pruned-set rows after the blocks
    write_parquet(table, out, provenance.software_versions() | {"inputs": provs,
                                                                 "checkpoints": provenance.checkpoints(provs),
                                                                 "input_sha256": provenance.input_sha256(inputs)})
