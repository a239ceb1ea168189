"""bf16 blocks against float32 on make real's two models: time and KL error, side by side (prints measured figures;
not a test).

    .venv/bin/python benchmarks/bench_bf16.py --root DIR      # DIR: where `make real` ran (its checkpoints, corpus)
    .venv/bin/python benchmarks/bench_bf16.py --root DIR --n-seqs 16 --models smollm2-135m/q4_1

For each checkpoint, `swapkl probe` runs twice on the same filled windows of the real study's probe text
(`resources/demo/corpus/valid.txt`), adjacent pairs, replacement and interchange: once with `--dtype float32` and
once with `--dtype bfloat16`, where the blocks run in bf16 and the logits, softmax and KL stay float32 (the default
`logits_dtype`). Each run is one process timed end to end (loading included), one after the other, so the two
times are comparable on an otherwise idle machine only. Then, per variant:

* the relative KL difference |bf16 - float32| / float32 (median, 95th percentile, worst);
* the difference as a share of the float32 KL's 95% t half-width over the windows (how much of the interval the
  precision uses);
* whether each pair's gap (the larger replacement direction minus interchange) keeps its sign, and whether the
  order of the interchange KLs (what the interchange guide ranks) is unchanged.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

MODELS = ("smollm2-135m/q4_1", "gemma3-270m/q4_k_m")


def probe(swapkl: str, checkpoint: Path, text: Path, dtype: str, n_seqs: int, out: Path) -> float:
    cmd = [swapkl, "probe", "--model", str(checkpoint), "--dtype", dtype, "--protocols", "replacement,interchange",
           "--pairs", "adjacent", "--text-file", str(text), "--packing", "filled", "--n-seqs", str(n_seqs),
           "--seq-len", "64", "--batch-size", "8", "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def gaps(rows: pd.DataFrame) -> dict:
    kl = {(r.protocol, int(r.layer_i), int(r.layer_j)): r.kl_mean for r in rows.itertuples()}
    return {(i, j): max(kl[("replacement", i, j)], kl[("replacement", j, i)]) - v
            for (p, i, j), v in kl.items() if p == "interchange"}


def compare(f32: pd.DataFrame, b16: pd.DataFrame) -> dict:
    key = ["protocol", "layer_i", "layer_j"]
    a, b = (t[t["protocol"] != "base"] for t in (f32, b16))
    j = a.merge(b, on=key, suffixes=("_f", "_b"))
    diff = (j["kl_mean_b"] - j["kl_mean_f"]).abs().to_numpy()
    rel = diff / j["kl_mean_f"].to_numpy()
    half = []
    for r in j.itertuples():
        w = np.asarray(r.seq_kl_sum_f, dtype=float) / np.asarray(r.seq_tokens_f, dtype=float)
        half.append(stats.t.ppf(0.975, len(w) - 1) * w.std(ddof=1) / np.sqrt(len(w)))
    share = diff / np.asarray(half)
    gf, gb = gaps(a), gaps(b)
    inter = j[j["protocol"] == "interchange"]
    return dict(variants=len(j), rel_median=np.median(rel), rel_p95=np.quantile(rel, 0.95), rel_max=rel.max(),
                share_median=np.median(share), share_max=share.max(),
                signs_kept=sum(np.sign(gf[p]) == np.sign(gb[p]) for p in gf), pairs=len(gf),
                order_kept=list(inter.sort_values("kl_mean_f")["layer_i"]) == list(inter.sort_values("kl_mean_b")["layer_i"]))


def cpu() -> str:
    """The CPU's model name and its bf16 matrix features (speed claims name the CPU)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    return f"{name}; avx512_bf16: {'avx512_bf16' in flags}, amx_bf16: {'amx_bf16' in flags}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="the directory `make real` ran in")
    parser.add_argument("--models", nargs="+", default=list(MODELS), metavar="MODEL/REVISION",
                        help="checkpoints under resources/checkpoints (default: %(default)s)")
    parser.add_argument("--n-seqs", type=int, default=8, help="filled windows of 64 tokens (default: 8)")
    args = parser.parse_args(argv)
    swapkl = str(Path(sys.executable).with_name("swapkl"))
    text = args.root / "resources/demo/corpus/valid.txt"
    print(cpu())
    print(f"{args.n_seqs} filled windows of 64 tokens, adjacent pairs, replacement and interchange")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            checkpoint = args.root / "resources/checkpoints" / model
            seconds, tables = {}, {}
            for dtype in ("float32", "bfloat16"):
                out = Path(tmp) / f"{dtype}.parquet"
                seconds[dtype] = probe(swapkl, checkpoint, text, dtype, args.n_seqs, out)
                tables[dtype] = pd.read_parquet(out)
            c = compare(tables["float32"], tables["bfloat16"])
            print(f"{model}: float32 {seconds['float32']:.1f} s, bf16 {seconds['bfloat16']:.1f} s "
                  f"({seconds['float32'] / seconds['bfloat16']:.2f}x); {c['variants']} variants: KL relative "
                  f"difference median {100 * c['rel_median']:.2f}%, 95th percentile {100 * c['rel_p95']:.2f}%, worst "
                  f"{100 * c['rel_max']:.2f}%; share of the 95% half-width median {c['share_median']:.3f}, worst "
                  f"{c['share_max']:.3f}; gap signs kept {c['signs_kept']} of {c['pairs']}; interchange order "
                  f"{'unchanged' if c['order_kept'] else 'changed'}")


if __name__ == "__main__":
    main()
