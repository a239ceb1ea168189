"""Scoring a changed (pruned, healed) model against its base with the evaluators of the probes and of pruning.

* :func:`kl_to_base`: per-window ``KL(p_base || p_model)`` sums over the valid tokens of probe windows, the
  base distribution summarised by the base model's engine pass (:mod:`swapkl.model.kl`). A model whose final
  norm and LM head equal the base's (a pruned model, a LoRA heal of attention or MLP projections) is
  scored by exactly the arithmetic the probe engine uses for a variant (so a healed variant with zero
  training steps reproduces its base protocol bit for bit); a model with another head (a full fine-tune
  of the LM head) by the textbook form :func:`swapkl.model.kl.kl_from_logits` of both logit tensors.
* :func:`model_perplexity`: sliding-window perplexity of :mod:`swapkl.pruning.perplexity`, per window.
"""

from __future__ import annotations

import numpy as np
import torch

from swapkl.model.engine import ProbeEngine
from swapkl.model.kl import kl_and_nll, kl_from_logits
from swapkl.pruning.perplexity import EvalWindows, window_nll
from swapkl.model.batch_loop import sweep, window_batches
from swapkl.model.choice_scores import choice_loglikelihoods, choice_predictions, task_requests
from swapkl.model.batch_loop import BASE


def _same_head(base: ProbeEngine, other: ProbeEngine) -> bool:
    a, b = base.adapter, other.adapter
    na, nb = list(a.final_norm.parameters()), list(b.final_norm.parameters())
    same_norm = len(na) == len(nb) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(na, nb))
    bias_same = (base.unemb.bias is None) == (other.unemb.bias is None) and (
        base.unemb.bias is None or torch.equal(base.unemb.bias, other.unemb.bias))
    same_weight = base.unemb.weight.shape == other.unemb.weight.shape and torch.equal(base.unemb.weight,
                                                                                      other.unemb.weight)
    return same_norm and bias_same and same_weight


@torch.inference_mode()
def model_token_kl(base: ProbeEngine, state, other: ProbeEngine, input_ids: torch.Tensor,
                   attention_mask: torch.Tensor) -> torch.Tensor:
    """Per-valid-token KL(p_base || p_other) of one batch whose base pass is ``state`` (float64 [N])."""
    h, ctx = other.adapter.prepare(input_ids, attention_mask)
    for slot in range(other.n_layers):
        h = other.adapter.run_block(slot, slot, h, ctx)
    hv = other.adapter.final_norm(h)[state.valid]
    if _same_head(base, other):
        kl, _ = kl_and_nll(base.unemb, hv, state.targets, base.chunk_tokens)
        return kl
    hb = base.adapter.final_norm(state.residuals[-1])[state.valid]
    out = torch.empty(hv.shape[0], dtype=torch.float64, device=hv.device)
    step = base.chunk_tokens
    for a in range(0, hv.shape[0], step):
        out[a:a + step] = kl_from_logits(base.unemb.logits(hb[a:a + step]), other.unemb.logits(hv[a:a + step]))
    return out


def kl_to_base(base_model, models: list, input_ids: np.ndarray, attention_mask: np.ndarray, *,
               batch_size: int = 8, device: str = "cpu", desc: str | None = "KL to the base"):
    """``([per-window KL sums of each model], per-window token counts)`` on the given windows."""
    base = ProbeEngine(base_model)
    others = [ProbeEngine(m) for m in models]
    sums = [np.zeros(input_ids.shape[0]) for _ in models]
    tokens = attention_mask.sum(1).astype(np.float64)
    for m in sweep(base, window_batches(input_ids, attention_mask, batch_size), [], device=device, desc=desc):
        for k, other in enumerate(others):
            kl = model_token_kl(base, m.state, other, m.batch.input_ids, m.batch.attention_mask)
            sums[k][m.batch.rows] = base.seq_stats(m.state, kl, torch.zeros_like(kl)).kl_sum.cpu().numpy()
    return sums, tokens


def model_perplexity(model, ew: EvalWindows, *, batch_size: int = 8, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """``(per-window NLL sums, per-window scored tokens)`` of ``model`` on the evaluation windows."""
    nll, tokens, _ = window_nll(ProbeEngine(model), ew, [], batch_size=batch_size, device=device)
    return nll, tokens


def task_accuracies(model, tokenizer, tasks: list, *, batch_size: int = 16) -> list[float]:
    """Accuracy (``acc``, the argmax of the choices' log-likelihoods) of ``model`` on each multiple-choice task
    (:func:`swapkl.relevance.tasks.load_task`), scored as the relevance tables score the base model."""
    engine = ProbeEngine(model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out = []
    for task in tasks:
        requests = task_requests(task, tokenizer, engine.adapter.max_positions)
        lls = choice_loglikelihoods(engine, requests, [], batch_size=batch_size, pad_id=pad)[BASE.key]
        out.append(float(choice_predictions(task, requests, lls)["acc"].mean()))
    return out
