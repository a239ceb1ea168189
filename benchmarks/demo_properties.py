"""What the demo's models have learned, read from a finished `make demo` run (prints measured figures; not a test).

    .venv/bin/python benchmarks/demo_properties.py [--root .]

Reads the demo's own outputs in ROOT and prints, with a PASS/FAIL mark per property:

* every demo training log (resources/demo/models/*/training_log.csv): held-out loss at step0 and at the last
  two evaluations, and their relative difference (flattened: < 3%);
* llama-demo's pruning (results/pruning.parquet): per budget, the delta-PPL of every guide (each must be > 0),
  of the interchange guide, and the mean over the random draws that keep the first and the last block
  ("interior" draws, computed here from `removed_layers`), which must lie above the interchange guide;
* pythia-demo's gap trajectory (results/swapkl.parquet, summary rows of the adjacent pair set): the mean
  adjacent gap per probed step and the ratio final / step0 (must be >= 3).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

FLAT_TOLERANCE = 0.03
GAP_GROWTH = 3.0
NOT_GUIDES = {"base", "random", "random_mean"}


def mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def training(root: Path) -> None:
    print("held-out loss (nats): step0 -> last two evaluations")
    for log in sorted((root / "resources/demo/models").glob("*/training_log.csv")):
        df = pd.read_csv(log).dropna(subset=["heldout_loss"])
        (s1, l1), (s2, l2) = df[["step", "heldout_loss"]].iloc[-2], df[["step", "heldout_loss"]].iloc[-1]
        rel = abs(l1 - l2) / l1
        print(f"  {log.parent.name:<20} {df['heldout_loss'].iloc[0]:.3f} -> step{int(s1)} {l1:.3f}, "
              f"step{int(s2)} {l2:.3f} ({100 * rel:.2f}% apart) {mark(rel < FLAT_TOLERANCE)}")


def pruning(root: Path, model: str) -> None:
    df = pd.read_parquet(root / "results/pruning.parquet")
    df = df[(df["model"] == model) & df["feasible"].astype(bool)]
    print(f"\n{model} pruning: delta-PPL (%) per budget")
    for budget, rows in df[df["budget"] > 0].groupby("budget"):
        guides = rows[~rows["guide"].isin(NOT_GUIDES)]
        worst = guides.loc[guides["delta_ppl_pct"].idxmin()]
        draws = rows[rows["guide"] == "random"]
        n_layers = int(rows["n_layers"].iloc[0])
        interior = draws[[0 not in list(r) and n_layers - 1 not in list(r) for r in draws["removed_layers"]]]
        inter = float(guides.loc[guides["guide"] == "interchange", "delta_ppl_pct"].iloc[0])
        interior_mean = interior["delta_ppl_pct"].mean() if len(interior) else float("nan")
        print(f"  n={budget}: lowest guide {worst['guide']} {worst['delta_ppl_pct']:+.2f} "
              f"({len(guides)} guide rows) {mark(bool((guides['delta_ppl_pct'] > 0).all()))}; "
              f"interchange {inter:+.2f} vs interior random mean {interior_mean:+.2f} "
              f"({len(interior)} of {len(draws)} draws) {mark(bool(interior_mean > inter))}")


def gap(root: Path, model: str) -> None:
    df = pd.read_parquet(root / "results/swapkl.parquet")
    df = df[(df["kind"] == "summary") & (df["model"] == model) & (df["pair_set"] == "adjacent")].sort_values("step")
    print(f"\n{model} mean adjacent gap (nats) by step: "
          + ", ".join(f"step{int(s)} {g:.4f}" for s, g in zip(df["step"], df["gap_mean"])))
    ratio = df["gap_mean"].iloc[-1] / df["gap_mean"].iloc[0]
    print(f"  final / step0 = {ratio:.2f}x {mark(ratio >= GAP_GROWTH)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="the folder `make demo` ran in")
    ap.add_argument("--pruned", default="llama-demo", help="model whose pruning is checked")
    ap.add_argument("--trajectory", default="pythia-demo", help="model whose gap trajectory is checked")
    args = ap.parse_args()
    training(args.root)
    pruning(args.root, args.pruned)
    gap(args.root, args.trajectory)


if __name__ == "__main__":
    main()
