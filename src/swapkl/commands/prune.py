"""``swapkl prune``, ``swapkl aggregate-pruning`` and ``swapkl plot-pruning``."""

from __future__ import annotations

import argparse

from swapkl.commands.arguments import (
    add_data_arguments,
    add_model_arguments,
    add_placement_arguments,
    add_text_fields_argument,
    command,
    data_spec,
    placement,
)
from swapkl.errors import SwapKLError


def _budgets(text: str) -> list[int]:
    """``"1-5"`` or ``"1,2,4"``."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            return list(range(lo, hi + 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"budgets must look like 1-5 or 1,2,4, got {text!r}") from None


def add_parser(sub) -> None:
    p = command(sub, "prune", run_prune, "prune one checkpoint by every guide and baseline; perplexity and KL cost")
    add_model_arguments(p)
    add_placement_arguments(p)
    p.add_argument("--probe", nargs="+", required=True, metavar="FILE.parquet",
                   help="probe files of this checkpoint (replacement, interchange, deletion rows)")
    p.add_argument("--repr", metavar="FILE.parquet", help="representation file (BI, angular); omit to skip them")
    p.add_argument("--budgets", type=_budgets, default=[1, 2, 3, 4, 5],
                   help="numbers of blocks to remove: 1-5 or 1,2,4 (default: 1-5)")
    p.add_argument("--spacing", type=int, default=1,
                   help="guided and random removals are more than this many indices apart (default: 1)")
    p.add_argument("--n-random", type=int, default=10, help="random draws per budget (default: 10)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random draws, recorded for the bootstrap of `aggregate-pruning` (default: 0)")
    p.add_argument("--angular-metric", default="angular", choices=["angular", "angular_last"],
                   help="Gromov distance averaged over tokens or at the last token (default: angular)")
    e = p.add_argument_group("evaluation text (exactly one of --eval-text-file, --eval-dataset)")
    e.add_argument("--eval-text-file", metavar="FILE", help="local UTF-8 text, paragraphs separated by blank lines")
    e.add_argument("--eval-dataset", metavar="NAME", help="a `datasets` dataset, e.g. wikitext")
    e.add_argument("--eval-dataset-config", metavar="CONFIG", help="e.g. wikitext-2-raw-v1")
    e.add_argument("--eval-split", default="test", help="dataset split (default: test)")
    add_text_fields_argument(e, "eval-")
    e.add_argument("--eval-window", type=int, default=512, help="tokens per window (default: 512)")
    e.add_argument("--eval-stride", type=int, default=256, help="window stride in tokens (default: 256)")
    e.add_argument("--eval-max-words", type=int, default=5000,
                   help="score only the first N whitespace-separated words; 0 = all (default: 5000)")
    add_data_arguments(p, prefix="calib-")
    p.add_argument("--agreement-out", metavar="FILE.parquet", help="also write the guides' agreement statistics")
    p.add_argument("--out", required=True, metavar="FILE.parquet", help="output Parquet file")

    a = command(sub, "aggregate-pruning", run_aggregate, "concatenate per-checkpoint pruning files")
    a.add_argument("--inputs", nargs="+", required=True, metavar="FILE.parquet", help="per-checkpoint pruning files")
    a.add_argument("--agreement-inputs", nargs="*", default=[], metavar="FILE.parquet",
                   help="per-checkpoint agreement files")
    a.add_argument("--agreement-out", metavar="FILE.parquet", help="combined agreement table")
    a.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs (default: 1000)")
    a.add_argument("--out", required=True, metavar="FILE.parquet", help="combined pruning table")

    f = command(sub, "plot-pruning", run_plot, "pruning figures (PNG + PDF)")
    f.add_argument("kind", choices=["delta", "ir-panel", "ir-trajectory", "agreement"],
                   help="delta: delta PPL vs budget for one checkpoint; ir-panel: I/R ratio vs budget, one line "
                        "per model; ir-trajectory: I/R ratio vs training step; agreement: guides' agreement")
    f.add_argument("--input", required=True, metavar="FILE.parquet", help="pruning (or agreement) table")
    f.add_argument("--model", help="model label (delta, ir-trajectory, agreement)")
    f.add_argument("--revision", help="revision label (delta, agreement)")
    f.add_argument("--bootstrap", type=int, default=1000, help="resamples for the I/R ratio CI (default: 1000)")
    f.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    f.add_argument("--out-png", required=True)
    f.add_argument("--out-pdf", required=True)


def eval_spec(args) -> dict:
    return dict(text_file=args.eval_text_file, dataset=args.eval_dataset, dataset_config=args.eval_dataset_config,
                split=args.eval_split, window=args.eval_window, stride=args.eval_stride,
                max_words=args.eval_max_words or None, text_fields=args.eval_text_fields)


def run_prune(args) -> None:
    """Remove blocks of one checkpoint guided by its probe files (interchange, replacement max/mean, deletion
    KL, anti-guided) and by the baselines (ShortGPT BI, Gromov angular distance, SLEB-iterative, random), for
    every budget; measure sliding-window perplexity on held-out text and KL against the base model on the probe
    windows; write one Parquet file (`swapkl aggregate-pruning` adds the bootstrap confidence intervals)."""
    from swapkl.prune import run_pruning

    run_pruning(args.model, args.probe, args.repr, args.out, revision=args.revision, budgets=args.budgets,
                spacing=args.spacing, eval_data=eval_spec(args), calib_data=data_spec(args, "calib-"),
                n_random=args.n_random, seed=args.seed, angular_metric=args.angular_metric,
                dtype=args.dtype, device=args.device, batch_size=args.batch_size, chunk_tokens=args.chunk_tokens,
                agreement_out=args.agreement_out, allow_pickle=args.allow_pickle,
                trust_remote_code=args.trust_remote_code, placement=placement(args))


def run_aggregate(args) -> None:
    """Concatenate per-checkpoint pruning (and agreement) files into results/pruning.parquet (and an agreement
    table), with 95% bootstrap CIs over windows, resampled with the seed each `swapkl prune` run recorded."""
    from swapkl.prune import aggregate_pruning

    aggregate_pruning(args.inputs, args.out, agreement_inputs=args.agreement_inputs, agreement_out=args.agreement_out,
                      n_boot=args.bootstrap)


def run_plot(args) -> None:
    """Draw one pruning figure from results/pruning.parquet or an agreement table."""
    from swapkl.figures import pruning as fig
    from swapkl.schemas import read_agreement, read_pruning

    need = {"delta": ("model", "revision"), "ir-trajectory": ("model",), "agreement": ("model", "revision")}
    for name in need.get(args.kind, ()):
        if getattr(args, name) is None:
            raise SwapKLError(f"plot-pruning {args.kind} needs --{name}")
    if args.kind == "agreement":
        fig.plot_agreement(read_agreement(args.input), args.model, args.revision, args.out_png, args.out_pdf)
        return
    df = read_pruning(args.input)
    if args.kind == "delta":
        fig.plot_delta_ppl(df, args.model, args.revision, args.out_png, args.out_pdf)
    elif args.kind == "ir-panel":
        fig.plot_ir_panel(df, args.out_png, args.out_pdf, n_boot=args.bootstrap, seed=args.seed)
    else:
        fig.plot_ir_trajectory(df, args.model, args.out_png, args.out_pdf, n_boot=args.bootstrap, seed=args.seed)
