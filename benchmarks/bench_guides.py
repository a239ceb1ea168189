"""Cost of each pruning guide's selection on a demo-shaped model (prints measured figures).

Not a test: run it by hand and read the numbers.

    .venv/bin/python benchmarks/bench_guides.py                    # demo shape: 6 layers, llama
    .venv/bin/python benchmarks/bench_guides.py --layers 12 --arch gpt_neox

The model has the demo's shape (swapkl.demo.architectures, vocabulary 2048) with random weights,
the calibration windows the demo's shape (16 x 128 tokens) with random tokens: a guide's cost does
not depend on what the weights learned. The probe rows the guides read are random KL values
(seeded); they decide which seeds the beam and LaCo take, not what a step costs. For each guide:
wall time of its selection (median of --repeats, one thread unless --threads), block evaluations
counted by the engine expressed in full forward passes over the calibration windows (a pass
resumed at slot s counts (L - s) / L), and the
calibration evaluations it reports (n_evals). The cost of *measuring* each pruned model
(perplexity and KL, shared by all guides) is not included.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd
import torch

from swapkl.data.windows import Windows
from swapkl.demo.architectures import DemoSize, demo_config, demo_model_class
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.guides import get_guide, registered
from swapkl.pruning.guides.context import GuideContext


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="llama", choices=["gpt_neox", "llama", "qwen3"])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--budgets", type=int, default=3)
    ap.add_argument("--calib-seqs", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = demo_config(args.arch, DemoSize(num_layers=args.layers), vocab_size=2048, eos_token_id=0, pad_token_id=1)
    model = demo_model_class(args.arch)(cfg).eval()
    L = args.layers
    rng = np.random.default_rng(0)
    ids = rng.integers(2, 2048, size=(args.calib_seqs, args.seq_len))
    calib = Windows(ids, np.ones_like(ids), "random")
    rows = [("interchange", i, j, rng.random()) for i in range(L) for j in range(i + 1, L)]
    rows += [("replacement", i, j, rng.random()) for i in range(L) for j in range(L) if i != j]
    rows += [("deletion", i, None, rng.random()) for i in range(L)]
    probe = pd.DataFrame(rows, columns=["protocol", "layer_i", "layer_j", "kl_mean"])
    budgets = list(range(1, args.budgets + 1))
    n_batches = -(-args.calib_seqs // 8)
    print(f"{args.arch}, {L} layers, calibration {args.calib_seqs} x {args.seq_len} tokens, budgets {budgets}, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"{'guide':<18}{'seconds':>9}{'forward passes':>16}{'n_evals at max budget':>23}")
    for g in registered():
        if not g.chooses:
            continue
        times, passes, evals = [], 0.0, None
        for _ in range(args.repeats):
            engine = ProbeEngine(model)
            ctx = GuideContext(probe, None, L, budgets, 1, n_random=5, engine=engine, calib=calib, batch_size=8)
            if g.name == "sleb_matched":  # it reads the beam's evaluation counts and extends SLEB-iterative
                get_guide("beam").select(ctx)
                get_guide("sleb_iterative").select(ctx)
                engine.layer_evals = 0
            t0 = time.perf_counter()
            out = g.select(ctx)
            times.append(time.perf_counter() - t0)
            passes = engine.layer_evals / (L * n_batches)
            if out is not None and out.n_evals:
                evals = out.n_evals.get((max(budgets), None))
        if g.name == "taylor":  # stock forward + backward, outside the engine's counter
            passes, extra = 1.0, " (+ 1 backward)"
        else:
            extra = ""
        print(f"{g.name:<18}{statistics.median(times):>9.3f}{passes:>16.1f}{'' if evals is None else evals:>23}{extra}")


if __name__ == "__main__":
    main()
