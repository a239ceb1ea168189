"""Peak memory of a probe run against model size, batch, sequence length, vocabulary and ``--chunk-tokens``, next to
the formula of docs/engine.md (prints measured figures; not a test).

    .venv/bin/python benchmarks/bench_memory.py                 # CPU: peak RSS growth, fresh process per row
    .venv/bin/python benchmarks/bench_memory.py --device cuda   # torch.cuda.max_memory_allocated

Each row runs, in a fresh process, what ``run_probe`` runs per batch (``swapkl.model.batch_loop.sweep``, then
the per-window sums) on a random float32 GPT-NeoX over full windows of random tokens, for a few deletion
and replacement variants, and measures the peak above the memory held once the model is built (weights,
libraries). :func:`predicted` is the formula; the table prints both and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine import PeakRSS  # noqa: E402

BASE = dict(layers=6, hidden=256, heads=4, ffn=1024, vocab=8192, batch=8, seq_len=128, chunk=2048)
#: one parameter changed per row, each in both directions where cheap
ROWS = [{}, dict(vocab=32768), dict(chunk=256), dict(vocab=32768, chunk=256), dict(batch=32), dict(batch=32, chunk=256),
        dict(seq_len=512), dict(layers=24), dict(hidden=512, ffn=2048), dict(batch=32, seq_len=512, chunk=8192)]
#: the tiny run whose peak is the fixed overhead
TINY = dict(layers=1, hidden=64, heads=4, ffn=128, vocab=256, batch=1, seq_len=16, chunk=16)


def predicted(c: dict, fixed: float = 0.0, dtype_bytes: int = 4) -> dict:
    """The formula of docs/engine.md (bytes above the weights), its terms by name; ``fixed``: the measured
    overhead of a tiny run (first use of library code and allocator arenas: no term of the shapes)."""
    n = c["batch"] * c["seq_len"]  # every position valid here
    chunk = min(c["chunk"], n)
    terms = {
        # the stream entering every slot and the one after the last, plus the carried stream of a planned variant
        "stream cache": (c["layers"] + 2) * n * c["hidden"] * dtype_bytes,
        # p-weighted unembedding rows (float64) and the final-normed stream of the variant (float32)
        "per-token vectors": n * c["hidden"] * (8 + 4),
        # one float32 [chunk x vocab] buffer (logits, then exp, then p, in place)
        "logits chunk": chunk * c["vocab"] * 4,
        # one block's transients: attention scores and probabilities, MLP hidden and its activation
        "block activations": 2 * c["batch"] * c["heads"] * c["seq_len"] ** 2 * 4 + 2 * n * c["ffn"] * 4,
    }
    terms["total"] = (fixed + terms["stream cache"] + terms["per-token vectors"]
                      + max(terms["logits chunk"], terms["block activations"]))
    return terms


def child(c: dict, device: str) -> dict:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    from swapkl.model.batch_loop import sweep, window_batches
    from swapkl.model.engine import ProbeEngine
    from swapkl.probes.protocols import build_variants

    torch.manual_seed(0)
    cfg = GPTNeoXConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                        num_attention_heads=c["heads"], intermediate_size=c["ffn"],
                        max_position_embeddings=max(2048, c["seq_len"]), rotary_pct=0.25, tie_word_embeddings=False)
    model = GPTNeoXForCausalLM(cfg).eval().to(device)
    engine = ProbeEngine(model, chunk_tokens=c["chunk"])
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, c["vocab"], (c["batch"], c["seq_len"]), generator=g)
    variants = build_variants(["deletion", "replacement"], "adjacent", c["layers"])[:4]
    batches = window_batches(ids.numpy(), torch.ones_like(ids).numpy(), c["batch"])

    def run():
        for m in sweep(engine, batches, variants, device=device):
            engine.seq_stats(m.state, m.kl, m.nll)

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        run()
        torch.cuda.synchronize()
        return {"peak": torch.cuda.max_memory_allocated() - start}
    with PeakRSS() as peak:
        run()
    return {"peak": peak.growth * 2**20}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rows", default=None, help="comma-separated row numbers (default: all)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    if a.child:
        print(json.dumps(child(json.loads(a.child), a.device)))
        return
    what = "torch.cuda.max_memory_allocated" if a.device.startswith("cuda") else "peak RSS growth (VmHWM), fresh process"
    print(f"# swapkl peak-memory benchmark  torch {torch.__version__}  device {a.device}  threads {a.threads}; "
          f"measured: {what}, above the model and libraries")
    print(f"# load (uptime): {os.popen('uptime').read().strip()}")
    measure = lambda c: json.loads(subprocess.run(  # noqa: E731
        [sys.executable, __file__, "--device", a.device, "--threads", str(a.threads), "--child", json.dumps(c)],
        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])["peak"]
    mib = lambda x: f"{x / 2**20:.0f}"  # noqa: E731
    fixed = measure(TINY)
    print(f"fixed overhead (a run of L=1 d=64 V=256 on 16 tokens): {fixed / 2**20:.1f} MiB")
    print("| L | d | ffn | V | B | T | chunk | stream cache | per-token vectors | logits chunk | block activations "
          "| predicted | measured | measured/predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    picked = range(len(ROWS)) if a.rows is None else [int(x) for x in a.rows.split(",")]
    for k in picked:
        c = {**BASE, **ROWS[k]}
        got = measure(c)
        t = predicted(c, fixed)
        print(f"| {c['layers']} | {c['hidden']} | {c['ffn']} | {c['vocab']} | {c['batch']} | {c['seq_len']} | "
              f"{c['chunk']} | {mib(t['stream cache'])} | {mib(t['per-token vectors'])} | {mib(t['logits chunk'])} | "
              f"{mib(t['block activations'])} | {mib(t['total'])} | {mib(got)} | {got / t['total']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
