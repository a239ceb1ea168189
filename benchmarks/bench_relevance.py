"""Accuracy-based relevance scan: the engine against lm-eval re-running each pruned model (prints figures).

Not a test: run it by hand and read the numbers.

    .venv/bin/python benchmarks/bench_relevance.py            # 12 blocks, the engine benchmark's shape

One random GPT-NeoX model of the engine benchmark's "issue" shape (12 blocks, hidden 256, vocabulary 8192)
and one synthetic multiple-choice task (lm-eval format, character tokenizer). Side by side in one run:

1. the engine: ``task_relevance`` scores the base model and all 12 single-block deletions (one base
   pass per batch, each deletion resumed from its slot);
2. lm-eval (pinned version, ``HFLM``) on each of the 13 models materialised by ``swapkl export``: load
   from disk and ``simple_evaluate``, once per model, which is what a user without swapkl runs.

Both use the same threads and batch size. The script prints both times, their ratio, the
bound from counted block evaluations per sequence (lm-eval: L + L(L-1); engine: L + L(L-1)/2, since
deleting block l re-runs only slots l..L-2), and the number of questions whose acc or acc_norm differ
(must be 0). Exporting the 12 pruned checkpoints is timed separately (it is not part of either scan).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_relevance import eos_char_tokenizer  # noqa: E402

from swapkl.model.engine import ProbeEngine  # noqa: E402
from swapkl.export import export_checkpoint  # noqa: E402
from swapkl.probes.protocols.block_deletion import deletion  # noqa: E402
from swapkl.relevance.accrel import task_relevance  # noqa: E402
from swapkl.model.choice_scores import BASE  # noqa: E402
from swapkl.relevance.tasks import load_task, write_task  # noqa: E402

WORDS = ("alpha beta gamma delta river stone bird fish apple lamp road hill cloud field light dark "
         "small large quick slow open close").split()


def build_model(a):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(a.seed)
    cfg = GPTNeoXConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, intermediate_size=4 * a.hidden, max_position_embeddings=2048,
                        rotary_pct=0.25, use_parallel_residual=True, tie_word_embeddings=False,
                        initializer_range=0.1, eos_token_id=2, bos_token_id=2)
    return GPTNeoXForCausalLM(cfg).eval()


def build_task(folder: Path, n_docs: int, seed: int) -> str:
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        choices = rng.sample(WORDS, 4)
        docs.append({"query": " ".join(rng.choice(WORDS) for _ in range(12)) + " then",
                     "choices": choices, "gold": rng.randrange(4)})
    return write_task(str(folder), "bench_mc", docs)


def lm_eval_run(path: Path, folder: Path, batch_size: int):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    t0 = clock()
    lm = HFLM(pretrained=str(path), device="cpu", batch_size=batch_size)
    t1 = clock()
    out = lm_eval.simple_evaluate(model=lm, tasks=["bench_mc"], log_samples=True, num_fewshot=0,
                                  task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    t2 = clock()
    return sorted(out["samples"]["bench_mc"], key=lambda s: s["doc_id"]), t1 - t0, t2 - t1


def clock() -> torch.Tensor:
    """(wall seconds, process CPU seconds); CPU time is what matters on a shared machine with one thread."""
    return torch.tensor([time.perf_counter(), time.process_time()], dtype=torch.float64)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--docs", type=int, default=100, help="questions (4 choices each)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1, help="engine repeats (median)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    import logging
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    logging.disable(logging.WARNING)
    L = a.layers
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = build_model(a)
        src = tmp / "model"
        model.save_pretrained(src)
        tok = eos_char_tokenizer()
        tok.save_pretrained(src)
        task = load_task(build_task(tmp / "tasks", a.docs, a.seed))

        times = []
        for _ in range(a.repeats):
            engine = ProbeEngine(model)
            t0 = clock()
            scores = task_relevance(engine, task, tok, model="bench", revision=None, batch_size=a.batch_size)
            times.append(clock() - t0)
        t_engine = torch.stack(times).median(dim=0).values
        n_seqs = a.docs * 4

        t0 = time.perf_counter()
        paths = {BASE: src}
        for layer in range(L):
            paths[deletion(layer, L).key] = tmp / f"minus{layer}"
            export_checkpoint(str(src), str(paths[deletion(layer, L).key]), remove=[layer], device="cpu")
        t_export = time.perf_counter() - t0

        t_load, t_eval = torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
        mismatches = 0
        for key, path in paths.items():
            samples, load_s, eval_s = lm_eval_run(path, tmp / "tasks", a.batch_size)
            t_load += load_s
            t_eval += eval_s
            for metric in ("acc", "acc_norm"):
                mine = scores.predictions[key][metric].tolist()
                mismatches += sum(x != s[metric] for x, s in zip(mine, samples))

    per_seq_lm = L + L * (L - 1)
    per_seq_engine = L + L * (L - 1) // 2
    n_batches = -(-n_seqs // a.batch_size)
    assert engine.layer_evals == per_seq_engine * n_batches, (engine.layer_evals, per_seq_engine, n_batches)
    w, c = 0, 1

    def both(t):
        return f"{float(t[w]):.2f} s wall, {float(t[c]):.2f} s CPU"

    print(f"model: GPT-NeoX, {L} blocks, hidden {a.hidden}, vocabulary {a.vocab}; task: {a.docs} questions x 4 "
          f"choices = {n_seqs} sequences; batch {a.batch_size}; torch threads {a.threads}; CPU: {cpu_name()}")
    print(f"engine relevance scan (base + {L} deletions): {both(t_engine)}; block evaluations "
          f"{per_seq_engine} per sequence (counted: {engine.layer_evals} over {n_batches} batches)")
    print(f"lm-eval HFLM, one run per model ({L + 1} models): evaluate {both(t_eval)}; load {both(t_load)}; "
          f"block evaluations {per_seq_lm} per sequence")
    for i, name in ((w, "wall"), (c, "CPU")):
        print(f"speed-up ({name} time): {float(t_eval[i] / t_engine[i]):.2f}x (evaluation only), "
              f"{float((t_eval[i] + t_load[i]) / t_engine[i]):.2f}x (with loading)")
    print(f"bound from block evaluations: {per_seq_lm}/{per_seq_engine} = {per_seq_lm / per_seq_engine:.2f}x "
          "(unembedding, tokenisation and lm-eval's bookkeeping not counted)")
    print(f"questions whose acc or acc_norm differ between the engine and lm-eval: {mismatches} "
          f"(of {2 * a.docs * (L + 1)} comparisons)")
    print(f"(exporting the {L} pruned checkpoints for lm-eval took {t_export:.2f} s, not counted above)")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
