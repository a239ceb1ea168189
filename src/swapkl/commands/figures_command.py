"""``swapkl figures KIND``: draw one figure (PNG + PDF) from a results table or training logs.

Together with ``swapkl plot-pruning`` and ``swapkl plot-relevance`` this draws every figure of the report.
"""

from __future__ import annotations

import argparse

from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError


def parse_logs(items: list[str]) -> dict[str, str]:
    """``["demo-small=logs/a.csv", ...]`` -> ``{"demo-small": "logs/a.csv"}`` (order kept)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise SwapKLError(f"--log {item!r}: expected NAME=CSV, e.g. demo-small=results/demo/small/training.csv")
        if name.strip() in out:
            raise SwapKLError(f"--log: name {name.strip()!r} given twice")
        out[name.strip()] = path.strip()
    return out


def parse_families(items: list[str]) -> dict:
    """``["fam=a:0,b:1"]`` -> ``{"fam": {"members": {"a": 0, "b": 1}}}``: seed families for the covariate figure."""
    out: dict = {}
    for item in items:
        name, sep, members = item.partition("=")
        pairs = [m.partition(":") for m in members.split(",") if m.strip()]
        if not sep or not name.strip() or not pairs or any(not s or not seed.strip().isdigit() for _, s, seed in pairs):
            raise SwapKLError(f"--family {item!r}: expected NAME=MODEL:SEED,MODEL:SEED, e.g. fam=tiny-s0:0,tiny-s1:1")
        out[name.strip()] = {"members": {m.strip(): int(seed) for m, _, seed in pairs}}
    return out


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--out-png`` and ``--out-pdf``, the output flags of every drawing command (``--png``/``--pdf``: deprecated
    aliases)."""
    g = p.add_argument_group("output")
    output_arg(g, "--out-png", "--png", what="figure", dest="out_png", required=True, metavar="FILE.png",
                   help="output PNG (--png: deprecated alias)")
    output_arg(g, "--out-pdf", "--pdf", what="figure", dest="out_pdf", required=True, metavar="FILE.pdf",
                   help="output PDF (--pdf: deprecated alias)")


def _kind(sub, name: str, help_: str, func, table: str, table_help: str, *, model: bool = True,
          revision: bool = False) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_, description=help_ + ". Writes a PNG and a PDF, byte-identical on reruns.")
    input_arg(p, f"--{table}", what=f"{table} table", required=True, metavar="FILE.parquet", help=table_help)
    if model:
        p.add_argument("--model", required=True, help="model label as in the table's model column")
    if revision:
        p.add_argument("--revision", required=True, help="checkpoint revision label, e.g. step143000")
    add_output_arguments(p)
    p.set_defaults(func=func)
    return p


AGGREGATE = "results/swapkl.parquet, written by swapkl aggregate"


def add_parser(sub) -> None:
    p = sub.add_parser("figures", help="draw a figure (PNG + PDF)",
                       description="Draw one figure from a results table (or, for training-curves, from training "
                                   "logs). Each writes a PNG and a PDF, byte-identical on reruns. Pruning and "
                                   "relevance figures: swapkl plot-pruning, swapkl plot-relevance.")
    kinds = p.add_subparsers(dest="figure", required=True, metavar="FIGURE")
    for name, help_ in (("gap-trajectory", "protocol gap vs training step, one panel per pair set"),
                        ("ratio-by-distance", "I/R ratio by pair distance, one line per checkpoint")):
        k = _kind(kinds, name, help_, _gap_trajectory if name == "gap-trajectory" else _ratio_by_distance,
                  "aggregate", AGGREGATE)
        k.add_argument("--gap", choices=["max", "fwd"], default="max",
                       help="replacement distance: max of both directions, or r(i<-j) for i < j (default: max)")
    _kind(kinds, "heatmaps", "replacement and interchange KL heatmaps of one checkpoint", _heatmaps, "aggregate",
          AGGREGATE, revision=True)
    _kind(kinds, "deletion-vs-bi", "deletion KL vs ShortGPT block influence per block", _deletion_vs_bi,
          "aggregate", AGGREGATE, revision=True)
    _kind(kinds, "weight-protocols", "weight averaging and head-level interchange of one checkpoint",
          _weight_protocols, "aggregate", AGGREGATE, revision=True)
    s = _kind(kinds, "seed-band", "protocol gap vs training step across the seeds of a family", _seed_band,
              "seeds", "results/seeds.parquet, written by the workflow's summarise_seeds", model=False)
    s.add_argument("--family", required=True, help="seed family name as in the table's family column")
    c = _kind(kinds, "covariates", "Spearman correlation of each covariate with the protocol gap", _covariates,
              "correlations", "results/covariate_correlations.parquet", model=False)
    c.add_argument("--family", action="append", default=[], metavar="NAME=MODEL:SEED,...",
                   help="a seed family whose members' pairs are pooled in one panel; repeat for each family")
    t = kinds.add_parser("training-curves", help="held-out and training loss vs step of the demo models",
                         description="Held-out and training loss vs step, from CSV logs with columns step, "
                                     "heldout_loss, train_loss. Writes a PNG and a PDF.")
    input_arg(t, "--log", what="training log", named=True, action="append", required=True, metavar="NAME=CSV",
                   help="a model's training log; repeat for each model")
    add_output_arguments(t)
    t.set_defaults(func=_training_curves)


def _gap_trajectory(args) -> None:
    from swapkl.figures.trajectory import plot_gap_trajectory

    plot_gap_trajectory(args.aggregate, args.out_png, args.out_pdf, model=args.model, gap=args.gap)


def _ratio_by_distance(args) -> None:
    from swapkl.figures.ratio_figure import plot_ratio_by_distance

    plot_ratio_by_distance(args.aggregate, args.out_png, args.out_pdf, model=args.model, gap=args.gap)


def _heatmaps(args) -> None:
    from swapkl.figures.heatmaps import plot_heatmaps

    plot_heatmaps(args.aggregate, args.out_png, args.out_pdf, model=args.model, revision=args.revision)


def _deletion_vs_bi(args) -> None:
    from swapkl.figures.deletion import plot_deletion_vs_bi

    plot_deletion_vs_bi(args.aggregate, args.out_png, args.out_pdf, model=args.model, revision=args.revision)


def _weight_protocols(args) -> None:
    from swapkl.figures.weights import plot_weight_protocols

    plot_weight_protocols(args.aggregate, args.out_png, args.out_pdf, model=args.model, revision=args.revision)


def _seed_band(args) -> None:
    from swapkl.figures.seeds_figure import plot_seed_band

    plot_seed_band(args.seeds, args.out_png, args.out_pdf, family=args.family)


def _covariates(args) -> None:
    from swapkl.figures.covariates_figure import plot_covariate_correlations

    plot_covariate_correlations(args.correlations, args.out_png, args.out_pdf, families=parse_families(args.family))


def _training_curves(args) -> None:
    from swapkl.figures.training import plot_training_curves

    plot_training_curves(parse_logs(args.log), args.out_png, args.out_pdf)
