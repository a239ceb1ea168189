"""Cost of the covariates job on a demo-sized model (prints measured figures; not a test).

    .venv/bin/python benchmarks/bench_covariates.py [--arch gpt_neox] [--pairs within:3]

Builds a random 12-layer demo model (swapkl.demo.architectures, the demo's default size), writes 32 windows of
128 random tokens, and times (1) a fresh Python process running swapkl.probes.covariates.run_covariates end to end
(start-up, loading, measuring, writing: what one workflow job costs) and (2) the measurement alone in this
process, with the number of block evaluations.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from swapkl.probes.covariates import measure
from swapkl.demo.architectures import DemoSize, demo_config
from swapkl.model.engine import ProbeEngine
from swapkl.probes.pairs import pairs_for


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="gpt_neox")
    ap.add_argument("--pairs", default="within:3")
    args = ap.parse_args()
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    cfg = demo_config(args.arch, DemoSize(num_layers=12), vocab_size=2048, eos_token_id=0, pad_token_id=0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    ids = np.random.default_rng(0).integers(1, 2048, size=(32, 128))
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(Path(tmp) / "ckpt")
        np.save(Path(tmp) / "tokens.npy", ids)
        code = ("from swapkl.probes.covariates import run_covariates; from swapkl.data.windows import DataSpec; "
                f"run_covariates({str(Path(tmp) / 'ckpt')!r}, {str(Path(tmp) / 'out.parquet')!r}, pairs={args.pairs!r}, "
                f"data=DataSpec(tokens={str(Path(tmp) / 'tokens.npy')!r}), device='cpu')")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        job = time.perf_counter() - t
    engine = ProbeEngine(model)
    pairs = pairs_for(args.pairs, 12)
    t = time.perf_counter()
    measure(engine, torch.from_numpy(ids), torch.ones(32, 128, dtype=torch.long), pairs, batch_size=8)
    alone = time.perf_counter() - t
    print(f"{args.arch}, 12 layers, {len(pairs)} pairs ({args.pairs}), 32 x 128 tokens, {torch.get_num_threads()} thread(s)")
    print(f"  one job in a fresh process: {job:.1f} s")
    print(f"  measurement alone:          {alone:.1f} s ({engine.layer_evals} block evaluations)")


if __name__ == "__main__":
    main()
