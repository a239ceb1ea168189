"""Train a tiny causal LM from scratch and checkpoint it on a Pythia-like schedule.

Output layout (``out_dir``)::

    step0/ step1/ step2/ ... stepN/   Hugging Face checkpoints (config.json, model.safetensors,
                                      tokenizer files), so a step directory loads like a hub revision
    training_log.csv                  per saved step: tokens seen, lr, held-out and train loss
    demo_model.json                   architecture config, seed, hyper-parameters, losses, timing

Everything but the wall-clock timing in ``demo_model.json`` is reproducible: with the same corpus,
tokenizer, arguments and machine (and thread count) the safetensors files are byte-identical.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

from swapkl.demo.architectures import (DEMO_ARCHS, MATCHED_ARCH, PE_FAMILIES, DemoSize, demo_config,
                                       demo_model_class, matched_config, matched_model)
from swapkl.tables.atomic import claim_folder, staged_dir, write_json_atomic, write_text_atomic
from swapkl.demo.corpus import corpus_file, load_corpus_manifest
from swapkl.demo.schedule import checkpoint_schedule, lr_at
from swapkl.demo.tokenizer import load_demo_tokenizer
from swapkl.demo.training_windows import BatchOrder, file_windows
from swapkl.errors import SwapKLError
from swapkl.options import require_int
from swapkl.progress import Progress

TRAINING_LOG = "training_log.csv"
SUMMARY = "demo_model.json"
LOG_COLUMNS = ("step", "tokens", "lr", "heldout_loss", "train_loss", "train_batch_loss")
OPTIMIZER_BETAS = (0.9, 0.95)
OPTIMIZER_EPS = 1e-8
_STEP_DIR = re.compile(r"^step(\d+)$")
OWNER_MARK = ".swapkl-demo-model"  # marks a folder that train_demo_model made (and may clean up)
# Staging directories of checkpoints (see swapkl.tables.atomic.staged_dir) left by a killed run.
_STAGING_DIR = re.compile(r"^\.step\d+\.\d+\.[0-9a-f]{12}\.(tmp|old)$")
# Tokenizer files copied into every checkpoint (those present in the tokenizer directory).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                    "merges.txt")


@contextmanager
def _torch_settings(threads: int | None):
    """Deterministic algorithms and a thread count for the block; the caller's settings come back after."""
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads if threads else (os.cpu_count() or 1))
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)
        torch.set_num_threads(old_threads)


@torch.no_grad()
def mean_nll(model, windows: torch.Tensor, batch_size: int = 16) -> float:
    """Mean next-token negative log-likelihood (nats) over all predicted positions of ``windows``."""
    was_training = model.training
    model.eval()
    total = 0.0
    count = 0
    for start in range(0, windows.shape[0], batch_size):
        ids = windows[start: start + batch_size]
        logits = model(input_ids=ids).logits.float()
        nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                              reduction="sum")
        total += float(nll)
        count += ids[:, 1:].numel()
    model.train(was_training)
    return total / count


@contextmanager
def _no_transformers_progress():
    """Silence transformers' per-save "Writing model shards" bar (our own bar covers training)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _save_checkpoint(model, tokenizer_dir: Path, final: Path) -> None:
    with staged_dir(final) as tmp, _no_transformers_progress():
        model.save_pretrained(tmp)
        for name in _TOKENIZER_FILES:
            src = tokenizer_dir / name
            if src.is_file():
                shutil.copyfile(src, tmp / name)
        stray = sorted(p.name for p in tmp.iterdir() if p.suffix in (".bin", ".pt", ".pth"))
        if stray:
            raise SwapKLError(f"checkpoint {final} would contain non-safetensors weights: {', '.join(stray)}")


def _log_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=LOG_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row[k] is None else row[k]) for k in LOG_COLUMNS})
    return buf.getvalue()


def _param_groups(model, weight_decay: float):
    decay, no_decay = [], []
    for _, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model, *, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """The demo's AdamW (decay on matrices only), fused into one kernel per step: the same update as the
    per-tensor loop, deterministic on CPU (benchmarks/demo_training.py times both)."""
    return torch.optim.AdamW(_param_groups(model, weight_decay), lr=lr, betas=OPTIMIZER_BETAS, eps=OPTIMIZER_EPS,
                             fused=True)


def train_step(model, optimizer, ids: torch.Tensor, *, lr: float, grad_clip: float) -> float:
    """One update on the batch ``ids`` (next-token loss, gradient clipping) at learning rate ``lr``;
    returns the batch loss before the update."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = model(input_ids=ids, labels=ids).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return float(loss.detach())


def _progress(total: int, enabled: bool, desc: str) -> Progress:
    return Progress(total, desc, "step", quiet=not enabled)


def _check_demo_training(arch: str, steps, seed, batch_size, seq_len, size, save_steps, n_even, lr, warmup_steps,
                         min_lr_ratio, weight_decay, grad_clip, eval_windows) -> tuple[DemoSize, list[int], int]:
    """:func:`train_demo_model`'s checks of its arguments; the model size, the checkpointed steps and the warmup
    steps, with their defaults filled in."""
    if arch not in (*DEMO_ARCHS, MATCHED_ARCH):
        raise SwapKLError(f"unknown demo architecture {arch!r} (expected one of {', '.join(DEMO_ARCHS)}, "
                          f"{MATCHED_ARCH})")
    if not isinstance(steps, int) or steps < 1:
        raise SwapKLError(f"`steps` {steps!r} must be a positive integer")
    require_int("seed", seed, 0)
    require_int("batch_size", batch_size, 1)
    require_int("seq_len", seq_len, 2)
    size = size or DemoSize()
    size.validate()
    if seq_len > size.max_position_embeddings:
        raise SwapKLError(
            f"sequence length {seq_len} exceeds max_position_embeddings={size.max_position_embeddings}")
    if save_steps is not None:
        try:  # ints, or revision names such as "step64"
            save = sorted({int(str(x).removeprefix("step")) for x in save_steps})
        except ValueError as exc:
            raise SwapKLError(f"save steps {list(save_steps)} must be integers or stepN names") from exc
    else:
        save = checkpoint_schedule(steps, n_even)
    if not save or save[0] < 0 or save[-1] > steps:
        raise SwapKLError(f"save steps {save} must lie within 0..{steps}")
    if warmup_steps is None:
        warmup_steps = max(1, steps // 10)
    if not (lr > 0 and 0 <= min_lr_ratio <= 1 and weight_decay >= 0 and grad_clip > 0 and warmup_steps >= 0):
        raise SwapKLError("demo training needs lr > 0, 0 <= min_lr_ratio <= 1, weight_decay >= 0, "
                          "grad_clip > 0 and warmup_steps >= 0")
    if eval_windows < 1:
        raise SwapKLError(f"eval windows {eval_windows} must be positive")
    return size, save, warmup_steps


def _on_device(device: str, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``tensors`` on ``device``; for CUDA, deterministic cuBLAS needs a fixed workspace, set before its first call."""
    if device != "cpu":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return tuple(t.to(device) for t in tensors)


def _check_matched(arch: str, position_encoding: str | None, device: str) -> None:
    """The checks of the position-encoding ablation's arguments (``position_encoding``, ``device``)."""
    if device not in ("cpu", "cuda"):
        raise SwapKLError(f"`device` {device!r} must be cpu or cuda")
    if arch == MATCHED_ARCH and position_encoding not in PE_FAMILIES:
        raise SwapKLError(f"`position_encoding` {position_encoding!r} of a {MATCHED_ARCH} demo model must be one "
                          f"of {', '.join(PE_FAMILIES)}")
    if arch != MATCHED_ARCH and position_encoding is not None:
        raise SwapKLError(f"`position_encoding` is set only for {MATCHED_ARCH} demo models, not for {arch!r}")


def _claim_demo_dir(out_dir: Path) -> None:
    """Take ``out_dir`` for a training run: a run in progress (or a failed one) is never mistaken for a finished
    one, and staging folders a killed run left go."""
    if out_dir.exists() and not out_dir.is_dir():
        raise SwapKLError(f"demo model output {out_dir} exists and is not a directory")
    claim_folder(out_dir, OWNER_MARK)  # stepN folders and logs in out_dir are replaced or deleted below
    (out_dir / SUMMARY).unlink(missing_ok=True)
    (out_dir / TRAINING_LOG).unlink(missing_ok=True)
    for path in out_dir.iterdir():
        if _STAGING_DIR.match(path.name) and path.is_dir():
            shutil.rmtree(path)


def _train_and_checkpoint(arch: str, config, tokenizer_dir: Path, out_dir: Path, train_windows: torch.Tensor,
                          heldout: torch.Tensor, train_eval: torch.Tensor, save: list[int], *, seed: int, steps: int,
                          batch_size: int, seq_len: int, lr: float, warmup_steps: int, min_lr_ratio: float,
                          weight_decay: float, grad_clip: float, threads: int | None, progress: bool):
    """Train the model of ``config`` from seed ``seed`` and write the checkpoints ``save``; the model, the log
    rows, the batch order and the held-out loss before and after training."""
    rows: list[dict] = []
    with _torch_settings(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = (matched_model(config, seed) if arch == MATCHED_ARCH else demo_model_class(arch)(config)).float()
        model.to(train_windows.device)
        model.train()
        order = BatchOrder(train_windows.shape[0], batch_size, seed)
        optimizer = make_optimizer(model, lr=lr, weight_decay=weight_decay)
        save_set = set(save)
        batch_losses: list[float] = []
        current_lr = 0.0

        def checkpoint(step: int) -> None:
            _save_checkpoint(model, tokenizer_dir, out_dir / f"step{step}")
            rows.append({
                "step": step,
                "tokens": step * batch_size * seq_len,
                "lr": current_lr,
                "heldout_loss": mean_nll(model, heldout),
                "train_loss": mean_nll(model, train_eval),
                "train_batch_loss": (sum(batch_losses) / len(batch_losses)) if batch_losses else None,
            })
            batch_losses.clear()

        initial_heldout = mean_nll(model, heldout)
        if 0 in save_set:
            checkpoint(0)
        bar = _progress(steps, progress, f"train {arch}")
        try:
            for step in range(1, steps + 1):
                current_lr = lr_at(step, total_steps=steps, peak_lr=lr, warmup_steps=warmup_steps,
                                   min_lr_ratio=min_lr_ratio)
                loss_value = train_step(model, optimizer, train_windows[order.next()], lr=current_lr,
                                        grad_clip=grad_clip)
                if not math.isfinite(loss_value):
                    raise SwapKLError(f"demo training of {arch} diverged at step {step} (loss {loss_value}); "
                                      "lower `lr`")
                batch_losses.append(loss_value)
                bar.update(1)
                bar.set_note(f"loss {loss_value:.3f}")
                if step in save_set:
                    checkpoint(step)
        finally:
            bar.close()
        final_heldout = rows[-1]["heldout_loss"] if rows and rows[-1]["step"] == steps else mean_nll(model, heldout)
    return model, rows, order, initial_heldout, final_heldout


def _drop_other_checkpoints(out_dir: Path, save_set: set[int]) -> None:
    """Drop checkpoints of an earlier run with another schedule, so ``out_dir`` is exactly this run."""
    for path in sorted(out_dir.iterdir()):
        match = _STEP_DIR.match(path.name)
        if match and path.is_dir() and int(match.group(1)) not in save_set:
            shutil.rmtree(path)


def train_demo_model(
    arch: str,
    corpus_dir: Path,
    tokenizer_dir: Path,
    out_dir: Path,
    *,
    steps: int = 300,
    save_steps: list[int] | None = None,
    n_even: int = 6,
    seed: int = 0,
    size: DemoSize | None = None,
    batch_size: int = 16,
    seq_len: int = 64,
    lr: float = 3e-3,
    warmup_steps: int | None = None,
    min_lr_ratio: float = 0.1,
    weight_decay: float = 0.1,
    grad_clip: float = 1.0,
    eval_windows: int = 64,
    threads: int | None = None,
    progress: bool = True,
    position_encoding: str | None = None,
    device: str = "cpu",
) -> dict:
    """Train a demo model of family ``arch`` from scratch and checkpoint it; return the summary dict.

    ``save_steps`` lists the checkpointed steps as ints or ``"stepN"`` names (``step0`` is the
    initialisation, before any update);
    by default it is ``checkpoint_schedule(steps, n_even)``. The held-out loss is the mean next-token
    NLL on the first ``eval_windows`` windows of ``valid.txt``; the train loss is the same on the first
    ``eval_windows`` windows of ``train.txt``; ``train_batch_loss`` is the mean loss of the updates since
    the previous checkpoint. ``threads`` defaults to all cores.

    ``arch="matched"``: the position-encoding ablation's model of ``position_encoding`` (rope, learned or alibi;
    :func:`swapkl.demo.architectures.matched_config`). ``device``: ``cpu`` or ``cuda``, where the model trains.
    """
    _check_matched(arch, position_encoding, device)
    size, save, warmup_steps = _check_demo_training(arch, steps, seed, batch_size, seq_len, size, save_steps, n_even,
                                                    lr, warmup_steps, min_lr_ratio, weight_decay, grad_clip,
                                                    eval_windows)
    corpus_dir, tokenizer_dir, out_dir = Path(corpus_dir), Path(tokenizer_dir), Path(out_dir)
    corpus = load_corpus_manifest(corpus_dir)
    tokenizer = load_demo_tokenizer(tokenizer_dir)
    _claim_demo_dir(out_dir)

    train_windows = file_windows(corpus_file(corpus_dir, "train"), tokenizer, seq_len, min_windows=batch_size)
    heldout = file_windows(corpus_file(corpus_dir, "valid"), tokenizer, seq_len,
                           max_windows=eval_windows, min_windows=eval_windows)
    train_windows, heldout, train_eval = _on_device(device, train_windows, heldout, train_windows[:eval_windows])

    ids = dict(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    config = (matched_config(position_encoding, size, **ids) if arch == MATCHED_ARCH
              else demo_config(arch, size, **ids))
    started = time.perf_counter()
    model, rows, order, initial_heldout, final_heldout = _train_and_checkpoint(
        arch, config, tokenizer_dir, out_dir, train_windows, heldout, train_eval, save, seed=seed, steps=steps,
        batch_size=batch_size, seq_len=seq_len, lr=lr, warmup_steps=warmup_steps, min_lr_ratio=min_lr_ratio,
        weight_decay=weight_decay, grad_clip=grad_clip, threads=threads, progress=progress)
    seconds = time.perf_counter() - started
    _drop_other_checkpoints(out_dir, set(save))

    summary = {
        "arch": arch, "position_encoding": position_encoding, "model_type": config.model_type,
        "model_class": type(model).__name__,
        "config": config.to_dict(), "size": asdict(size), "n_parameters": sum(p.numel() for p in model.parameters()),
        "seed": seed, "steps": steps, "save_steps": save, "batch_size": batch_size, "seq_len": seq_len,
        "tokens_per_step": batch_size * seq_len, "lr": lr, "warmup_steps": warmup_steps, "min_lr_ratio": min_lr_ratio,
        "weight_decay": weight_decay, "grad_clip": grad_clip,
        "optimizer": f"AdamW(betas={OPTIMIZER_BETAS}, eps={OPTIMIZER_EPS}, fused)",
        "eval_windows": eval_windows, "train_windows": int(train_windows.shape[0]), "epochs_started": order.epoch,
        "initial_heldout_loss": initial_heldout, "final_heldout_loss": final_heldout,
        "log_vocab": math.log(len(tokenizer)),
        "corpus_sha256": {k: v["sha256"] for k, v in corpus["files"].items()},
        "corpus_python_version": corpus.get("python_version"), "vocab_size": len(tokenizer),
        "threads": threads if threads else (os.cpu_count() or 1), "train_seconds": round(seconds, 3),
        "torch_version": torch.__version__, "device": device,
    }
    write_text_atomic(out_dir / TRAINING_LOG, _log_csv(rows))
    write_json_atomic(out_dir / SUMMARY, summary)
    return summary
