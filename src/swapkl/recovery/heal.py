"""Healing: a short fine-tune of a changed model (LoRA adapters through PEFT, or the last blocks in full).

What a heal does, step by step:

1. Training text (:class:`TrainText`: a text file or a `datasets` split, read by :mod:`swapkl.pruning.perplexity`'s
   reader of evaluation text, whole or its first ``max_words`` words) is tokenised once and cut into consecutive,
   non-overlapping chunks of ``seq_len`` tokens; a last partial chunk is dropped.
2. Step ``s`` (0-based) trains on ``batch_size`` chunks drawn with replacement; the draws of all steps
   come from one ``numpy.random.default_rng(seed)``, and the adapters' random initialisation from
   ``torch.manual_seed(seed)``, so a heal is reproducible from its settings.
3. The loss of a chunk is the mean over its positions 0..T-2 of either the next-token cross-entropy
   (``loss: nll``, the recovery experiment) or ``KL(p_teacher || p_model)`` of the next-token
   distributions (``loss: kl``, distillation toward a teacher's own predictions; its gradient with respect
   to the logits, ``q - p``, is formed directly, so it is exactly zero where the model already reproduces
   the teacher).
4. AdamW (PyTorch's, betas 0.9/0.999, eps 1e-8) on the trainable parameters only, with dropout off (the
   published run's forward has none; GPT-2's residual dropout would otherwise make a heal noisy).

Methods: ``lora`` wraps the chosen projections with PEFT LoRA adapters (no dropout, no bias); ``last_k``
trains the last ``last_k`` blocks and the LM head in full (the Navigation-LLM baseline), every other
parameter frozen. The named preset ``paper`` holds the published recovery settings: rank 16, alpha 32
on the Q/K/V/O projections, 200 steps, lr 2e-4, weight decay 0.01, batch 1, 128 tokens.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn.functional as F

from swapkl.data.windows import tokenize_text
from swapkl.errors import SwapKLError
from swapkl.pruning.perplexity import eval_paragraphs, first_words
from swapkl.adapters import adapter_class, get_adapter
from swapkl.progress import track
from swapkl.recovery.heal_settings import HealSettings, TrainText

log = logging.getLogger(__name__)

def train_chunks(text: TrainText, tokenizer, seq_len: int, max_positions: int | None = None) -> np.ndarray:
    """The training chunks ``[n, seq_len]`` of ``text`` (see the module docstring); ``max_positions``: the model's
    positions (``Adapter.max_positions``), which a chunk may not exceed."""
    if max_positions is not None and seq_len > max_positions:
        raise SwapKLError(f"heal seq_len {seq_len} exceeds the model's {max_positions} positions "
                          "(max_position_embeddings)")
    spec = text.eval_spec()
    spec.check()
    if tokenizer is None:
        raise SwapKLError("healing needs the model's tokenizer to read its training text")
    ids = np.asarray(tokenize_text(tokenizer, first_words(eval_paragraphs(spec), spec.max_words)), dtype=np.int64)
    n = len(ids) // seq_len
    if n == 0:
        raise SwapKLError(f"training text {spec.describe()} has {len(ids)} tokens, fewer than one chunk of "
                          f"{seq_len}")
    return ids[: n * seq_len].reshape(n, seq_len)


def lora_target_modules(model, targets: tuple[str, ...]) -> list[str]:
    """PEFT target names for ``targets``: the aliases q/k/v/o of the model's attention projections, or module
    names as they are; each must name at least one linear module of the model."""
    aliases = adapter_class(getattr(model.config, "model_type", None)).lora_projections
    names: list[str] = []
    for t in targets:
        for name in aliases.get(t, (t,)):
            if name not in names:
                names.append(name)
    modules = [n for n, _ in model.named_modules()]
    for name in names:
        if not any(n == name or n.endswith("." + name) for n in modules):
            raise SwapKLError(f"LoRA target {name!r} names no module of this {model.config.model_type} model "
                              f"(aliases: {', '.join(aliases) or 'none'})")
    return names


def prepare_trainable(model, settings: HealSettings):
    """The model to train: a PEFT LoRA wrapper, or ``model`` with only its last blocks and LM head trainable."""
    torch.manual_seed(settings.seed)
    if settings.method == "lora":
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=0.0, bias="none",
                         target_modules=lora_target_modules(model, settings.targets),
                         fan_in_fan_out=adapter_class(model.config.model_type).lora_fan_in_fan_out)
        return get_peft_model(model, cfg)
    blocks = get_adapter(model).blocks
    if settings.last_k > len(blocks):
        raise SwapKLError(f"last_k {settings.last_k} exceeds the model's {len(blocks)} blocks")
    for p in model.parameters():
        p.requires_grad_(False)
    for block in list(blocks)[len(blocks) - settings.last_k:]:
        for p in block.parameters():
            p.requires_grad_(True)
    for p in model.get_output_embeddings().parameters():
        p.requires_grad_(True)
    return model


def chunk_loss(model, ids: torch.Tensor, loss: str, teacher=None) -> torch.Tensor:
    """Mean next-token loss of ``model`` over the positions 0..T-2 of ``ids`` [B, T]."""
    logits = model(input_ids=ids, use_cache=False).logits[:, :-1].float()
    if loss == "nll":
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    with torch.no_grad():
        lp = torch.log_softmax(teacher(input_ids=ids, use_cache=False).logits[:, :-1].float(), dim=-1)
        lq = torch.log_softmax(logits.detach(), dim=-1)
        p, q = lp.exp(), lq.exp()
        value = (p * (lp - lq)).sum(-1).mean()
    # d KL / d logits = q - p, formed directly: exact, and exactly 0 where the model reproduces the teacher bit
    # for bit (autograd through log_softmax leaves rounding residue there, which Adam would amplify)
    surrogate = ((q - p) * logits).sum(-1).mean()
    return surrogate - surrogate.detach() + value


def step_draws(n_chunks: int, settings: HealSettings) -> np.ndarray:
    """``[steps, batch_size]`` chunk indices of every step (module docstring, step 2)."""
    rng = np.random.default_rng(settings.seed)
    return rng.integers(0, n_chunks, size=(settings.steps, settings.batch_size))


def train(model, chunks: np.ndarray, settings: HealSettings, *, teacher=None, on_step=None,
          desc: str = "heal") -> list[float]:
    """Train ``model`` (from :func:`prepare_trainable`) in place; return the loss of every step.

    ``on_step(step, model)`` is called after each step (``step`` = number of steps done) and once before
    the first with 0, for recovery curves; it runs under ``torch.no_grad``.
    """
    if settings.loss == "kl" and teacher is None:
        raise SwapKLError("a KL heal needs the teacher model")
    device = next(model.parameters()).device
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
    draws = step_draws(len(chunks), settings)
    data = torch.as_tensor(chunks, dtype=torch.long)
    losses: list[float] = []
    if on_step is not None:
        _callback(on_step, 0, model)
    model.eval()  # dropout off, as in the published run's forward (gradients flow in eval mode all the same)
    for step in track(range(settings.steps), desc, "step"):
        loss = chunk_loss(model, data[draws[step]].to(device), settings.loss, teacher)
        if not torch.isfinite(loss):
            raise SwapKLError(f"the heal's loss became non-finite at step {step + 1}; lower the learning rate")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            _callback(on_step, step + 1, model)
    model.eval()
    return losses


def _callback(on_step, step: int, model) -> None:
    with torch.no_grad():
        on_step(step, model)


def merged(model):
    """The plain transformers model with trained LoRA adapters folded into its weights (``model`` itself for
    a full fine-tune)."""
    from peft import PeftModel

    if isinstance(model, PeftModel):
        return model.merge_and_unload()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
