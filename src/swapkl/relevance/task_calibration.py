"""Choosing the blocks to prune from a calibration set of tasks (the second paper's task-specific and
task-agnostic pruning).

A :class:`Calibration` is named data the guides read: documents of one or more lm-eval tasks on their
calibration split (:mod:`swapkl.relevance.task_splits`; one task = task-specific, several = a mix such as 10%
of each benchmark's training data), or language-modelling windows (C4). Every guide sees the same data:

* ``accuracy``: accuracy-guided iterative pruning (:func:`swapkl.pruning.guides.accuracy.accuracy_guided_sets`)
  on the calibration documents' lm-eval ``acc``, pooled over documents (next-token accuracy for windows); on a
  generative task (GSM8K) its ``exact_match`` under the tables' filter
  (:data:`swapkl.relevance.task_tables.GENERATIVE_METRIC`), each candidate generating every calibration document
  (:mod:`swapkl.relevance.task_generation`);
* ``taylor``, ``bi`` (cosine), ``sleb_iterative`` (perplexity), ``interchange`` and ``deletion`` KL: the
  registered guides (:mod:`swapkl.pruning.guides`) on calibration windows, which for tasks are the documents'
  gold requests (context + gold continuation) as text (a generative document: its own prompt and target, without
  the few-shot examples). Interchange and deletion KL are measured here on those
  windows (interchange over the ``score_pairs`` pair set), BI from the same base passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import Windows, default_bos, select_windows, tokenize_text
from swapkl.errors import SwapKLError
from swapkl.model.batch_loop import sweep, window_batches
from swapkl.probes.pairs import pairs_for
from swapkl.model.variant import removal_variant
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.probes.protocols.interchange import interchange
from swapkl.probes.residual_stream import representation_sums
from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.accuracy import accuracy_guided_sets, window_accuracy
from swapkl.pruning.guides.guide_registry import get_guide
from swapkl.pruning.prune import kl_on_windows
from swapkl.pruning.selection_options import SelectionOptions
from swapkl.relevance.task_generation import generative_scores
from swapkl.relevance.task_tables import GENERATIVE_METRIC, METHODS
from swapkl.model.choice_scores import BASE, choice_loglikelihoods, make_request

#: methods chosen by a registered guide of the pruning study
REGISTERED = ("taylor", "bi", "sleb_iterative", "interchange", "deletion")


@dataclass
class Calibration:
    name: str
    kind: str  # "task" (one task), "mix" (several tasks) or "lm" (language-modelling windows)
    windows: Windows
    splits: list = field(default_factory=list)  # TaskSplits (task and mix kinds)

    @property
    def n_docs(self) -> int:
        return sum(s.n_docs for s in self.splits) if self.splits else int(self.windows.input_ids.shape[0])


def text_windows(texts: list[str], tokenizer, seq_len: int, pad_id: int, source: str) -> Windows:
    """Each text as one window of at most ``seq_len`` tokens (the tokenizer's default BOS first), in order."""
    spec = DataSpec(text_file=source, n_seqs=len(texts), seq_len=seq_len, min_tokens=2, selection="first")
    return select_windows(texts, lambda t: tokenize_text(tokenizer, t), spec, pad_id, default_bos(tokenizer))


def task_calibration(name: str, splits: list, tokenizer, *, seq_len: int, pad_id: int) -> Calibration:
    texts = [t for s in splits for t in s.gold_texts()]
    return Calibration(name, "task" if len(splits) == 1 else "mix",
                       text_windows(texts, tokenizer, seq_len, pad_id, f"calibration:{name}"), splits)


def split_loglikelihoods(engine, split, tokenizer, variants, *, batch_size: int, pad_id: int) -> list:
    """Per subtask of ``split``: (its HarnessTask, its requests, {variant key: log-likelihoods})."""
    out = []
    for part in split.parts:
        requests = [make_request(tokenizer, d, c, ctx, cont, engine.adapter.max_positions, part.name)
                    for d, args in enumerate(part.arguments) for c, (ctx, cont) in enumerate(args)]
        out.append((part, requests, choice_loglikelihoods(engine, requests, variants, batch_size=batch_size,
                                                          pad_id=pad_id)))
    return out


def per_document_metrics(part, requests, lls: np.ndarray) -> dict[str, np.ndarray]:
    """lm-eval's ``process_results`` of every document of one subtask: metric -> per-document values."""
    per_doc: list[list[float]] = [[] for _ in part.docs]
    for r, v in zip(requests, lls):
        per_doc[r.doc].append(float(v))
    results = [part.task.process_results(doc, [(v, False) for v in vs]) for doc, vs in zip(part.docs, per_doc)]
    return {m: np.array([float(r[m]) for r in results]) for m in ("acc", "acc_norm") if m in results[0]}


def pooled_task_accuracy(engine, splits: list, tokenizer, sets, *, batch_size: int, pad_id: int,
                         metric: str = "acc") -> dict[tuple[int, ...], float]:
    """lm-eval ``acc`` (a generative task: ``exact_match`` of :data:`GENERATIVE_METRIC`) pooled over every
    calibration document of ``splits``, for each removed set (``()``: the unpruned model)."""
    variants = {tuple(sorted(s)): removal_variant(s, engine.n_layers) for s in sets if s}
    hits: dict[tuple, list] = {s: [] for s in variants} | {(): []}
    for split in splits:
        if split.generative:
            for s, scores in generative_scores(engine, split, tokenizer, hits, batch_size=batch_size).items():
                hits[s].append(scores[GENERATIVE_METRIC])
            continue
        for part, requests, lls in split_loglikelihoods(engine, split, tokenizer, list(variants.values()),
                                                        batch_size=batch_size, pad_id=pad_id):
            hits[()].append(per_document_metrics(part, requests, lls[BASE])[metric])
            for s, v in variants.items():
                hits[s].append(per_document_metrics(part, requests, lls[v.key])[metric])
    return {s: float(np.concatenate(h).mean()) for s, h in hits.items()}


def probe_tables(engine, windows: Windows, score_pairs: str, *, batch_size: int,
                 device) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Interchange (``score_pairs``) and deletion KL rows, and BI rows, measured on ``windows``, in the columns
    the registered guides read from probe and representation files."""
    n = engine.n_layers
    variants = [interchange(i, j, n) for i, j in pairs_for(score_pairs, n)] + [deletion(b, n) for b in range(n)]
    kl, tokens = kl_on_windows(engine, windows, variants, batch_size, device)
    probe = pd.DataFrame([dict(protocol=v.protocol, layer_i=v.layer_i, layer_j=v.layer_j,
                               kl_mean=float(k.sum() / tokens.sum())) for v, k in zip(variants, kl)])
    sums, counts = np.zeros(n), np.zeros(n)
    for m in sweep(engine, window_batches(windows.input_ids, windows.attention_mask, batch_size), [], device=device):
        for (metric, layer, _), (s, c) in representation_sums(m.state.residuals, m.state.valid).items():
            if metric == "bi":
                sums[layer] += float(s.sum())
                counts[layer] += float(c.sum())
    rep = pd.DataFrame(dict(metric="bi", width=1, layer_i=np.arange(n), value=sums / np.maximum(counts, 1)))
    return probe, rep


def choose_sets(engine, calib: Calibration, tokenizer, budgets: dict[str, list[int]], *, spacing: int = 0,
                score_pairs: str = "adjacent", batch_size: int = 8, pad_id: int = 0,
                device="cpu") -> dict[tuple[str, int], tuple[int, ...]]:
    """The blocks each method removes at each of its budgets (``budgets``: method -> budgets), calibrated on
    ``calib``; ``original`` is the unpruned model at budget 0."""
    unknown = sorted(set(budgets) - set(METHODS))
    if unknown:
        raise SwapKLError(f"unknown pruning method {', '.join(map(repr, unknown))}: choose from {', '.join(METHODS)}")
    n = engine.n_layers
    bad = [b for bs in budgets.values() for b in bs if not 1 <= b < n]
    if bad:
        raise SwapKLError(f"budget {bad[0]} is not between 1 and {n - 1} blocks of this {n}-block model")
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    if "original" in budgets:
        out[("original", 0)] = ()
    if "accuracy" in budgets:
        if calib.kind == "lm":
            accuracy_of = lambda sets: window_accuracy(engine, calib.windows, sets, batch_size=batch_size)  # noqa: E731
        else:
            accuracy_of = lambda sets: pooled_task_accuracy(engine, calib.splits, tokenizer, sets,  # noqa: E731
                                                            batch_size=batch_size, pad_id=pad_id)
        chosen = accuracy_guided_sets(accuracy_of, n, max(budgets["accuracy"]))
        out |= {("accuracy", b): chosen[b] for b in budgets["accuracy"]}
    guides = [m for m in budgets if m in REGISTERED]
    if guides:
        probe, rep = probe_tables(engine, calib.windows, score_pairs, batch_size=batch_size, device=device)
        all_budgets = sorted({b for m in guides for b in budgets[m]})
        ctx = GuideContext(probe=probe, rep=rep, n_layers=n, budgets=all_budgets, spacing=spacing, engine=engine,
                           calib=calib.windows, batch_size=batch_size, device=device,
                           options=SelectionOptions(score_pairs=score_pairs))
        for m in guides:
            sel = get_guide(m).select(ctx)
            for b in budgets[m]:
                picked = sel.removed[(b, None)]
                if picked is None:
                    raise SwapKLError(f"guide {m!r} cannot remove {b} blocks with spacing {spacing}")
                out[(m, b)] = tuple(sorted(picked.removed))
    return out
