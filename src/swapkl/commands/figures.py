"""``swapkl figures KIND``: draw one figure (PNG + PDF) from the aggregate or training logs."""

from __future__ import annotations

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


def _outputs(p) -> None:
    output_arg(p, "--png", what="figure", required=True, metavar="FILE.png", help="output PNG")
    output_arg(p, "--pdf", what="figure", required=True, metavar="FILE.pdf", help="output PDF")


def _from_aggregate(sub, name: str, help_: str, func, revision: bool) -> None:
    p = sub.add_parser(name, help=help_, description=help_ + ". Writes a PNG and a PDF.")
    input_arg(p, "--aggregate", what="aggregate", required=True, metavar="FILE.parquet", help="the file written by swapkl aggregate")
    p.add_argument("--model", required=True, help="model name as in the aggregate's model column")
    if revision:
        p.add_argument("--revision", required=True, help="checkpoint revision, e.g. step143000")
    _outputs(p)
    p.set_defaults(func=func)


def add_parser(sub) -> None:
    p = sub.add_parser("figures", help="draw a figure (PNG + PDF)",
                       description="Draw one figure from the aggregate (or, for training-curves, from training "
                                   "logs). Each writes a PNG and a PDF, byte-identical on reruns.")
    kinds = p.add_subparsers(dest="figure", required=True, metavar="FIGURE")
    _from_aggregate(kinds, "gap-trajectory", "protocol gap vs training step, one panel per pair set",
                    _gap_trajectory, revision=False)
    _from_aggregate(kinds, "ratio-by-distance", "I/R ratio by pair distance, one line per checkpoint",
                    _ratio_by_distance, revision=False)
    _from_aggregate(kinds, "heatmaps", "replacement and interchange KL heatmaps of one checkpoint",
                    _heatmaps, revision=True)
    _from_aggregate(kinds, "deletion-vs-bi", "deletion KL vs ShortGPT block influence per block",
                    _deletion_vs_bi, revision=True)
    t = kinds.add_parser("training-curves", help="held-out and training loss vs step of the demo models",
                         description="Held-out and training loss vs step, from CSV logs with columns step, "
                                     "heldout_loss, train_loss. Writes a PNG and a PDF.")
    input_arg(t, "--log", what="training log", named=True, action="append", required=True, metavar="NAME=CSV",
                   help="a model's training log; repeat for each model")
    _outputs(t)
    t.set_defaults(func=_training_curves)


def _gap_trajectory(args) -> None:
    from swapkl.figures import plot_gap_trajectory

    plot_gap_trajectory(args.aggregate, args.png, args.pdf, model=args.model)


def _ratio_by_distance(args) -> None:
    from swapkl.figures import plot_ratio_by_distance

    plot_ratio_by_distance(args.aggregate, args.png, args.pdf, model=args.model)


def _heatmaps(args) -> None:
    from swapkl.figures import plot_heatmaps

    plot_heatmaps(args.aggregate, args.png, args.pdf, model=args.model, revision=args.revision)


def _deletion_vs_bi(args) -> None:
    from swapkl.figures import plot_deletion_vs_bi

    plot_deletion_vs_bi(args.aggregate, args.png, args.pdf, model=args.model, revision=args.revision)


def _training_curves(args) -> None:
    from swapkl.figures import plot_training_curves

    plot_training_curves(parse_logs(args.log), args.png, args.pdf)
