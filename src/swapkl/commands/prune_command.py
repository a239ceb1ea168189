"""``swapkl prune``, ``swapkl aggregate-pruning`` and ``swapkl plot-pruning``."""

from __future__ import annotations

import argparse
import inspect

from swapkl.commands.arguments import (
    add_data_arguments,
    add_forward_arguments,
    add_model_arguments,
    add_placement_arguments,
    add_text_source_arguments,
    command,
    data_spec,
    default_option,
    label_metadata,
    placement,
)
from swapkl.commands.figures_command import add_output_arguments, draw_figure
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.figures.figure_registry import figures
from swapkl.model.model_job import default
from swapkl.pruning.guides import registered
from swapkl.pruning.eval_spec import TEXT_PREPS, EvalSpec
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.pruning.selection_options import SelectionOptions
from swapkl.pruning.table import AggregatePruningJob, aggregate_pruning


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
    p = command(sub, "prune", run_prune)
    p.description = prune_description()
    add_model_arguments(p, label=True)
    add_forward_arguments(p)
    add_placement_arguments(p)
    input_arg(p, "--probe", what="probe file", nargs="+", required=True, metavar="FILE.parquet",
                   help="probe files of this checkpoint (replacement, interchange, deletion rows)")
    input_arg(p, "--repr", what="representation file", metavar="FILE.parquet", help="representation file (BI, angular); omit to skip them")
    budgets = default(PruneJob, "budgets")
    p.add_argument("--budgets", type=_budgets, default=list(budgets),
                   help=f"numbers of blocks to remove: 1-5 or 1,2,4 (default: {budgets[0]}-{budgets[-1]})")
    default_option(p, "--spacing", PruneJob,
                   "guided and random removals are more than this many indices apart (default: %(default)s)")
    default_option(p, "--n-random", PruneJob, "random draws per budget (default: %(default)s)")
    default_option(p, "--seed", PruneJob,
                   "seed of the random draws, recorded for the bootstrap of `aggregate-pruning` (default: %(default)s)")
    p.add_argument("--random-include-ends", action="store_true",
                   help="random draws may remove the first and last block (default: interior blocks 1..L-2 only, "
                        "as the paper's random baselines); recorded in the provenance")
    p.add_argument("--guides", nargs="+", metavar="GUIDE",
                   help="run only these guides (names as in the list below; default: every guide); the unpruned "
                        "row is always written, random_mean whenever random runs")
    p.add_argument("--angular-metric", default=default(PruneJob, "angular_metric"), choices=["angular", "angular_last"],
                   help="Gromov distance averaged over tokens or at the last token (default: %(default)s)")
    e = p.add_argument_group("evaluation text (exactly one of --eval-text-file, --eval-dataset)")
    add_text_source_arguments(e, "eval-", what="evaluation text file", split=EvalSpec.split,
                              config_help="e.g. wikitext-2-raw-v1")
    e.add_argument("--eval-window", type=int, default=EvalSpec.window, help="tokens per window (default: %(default)s)")
    e.add_argument("--eval-stride", type=int, default=EvalSpec.stride,
                   help="window stride in tokens (default: %(default)s)")
    e.add_argument("--eval-max-words", type=int, default=EvalSpec.max_words,
                   help="score only the first N whitespace-separated words; 0 = all (default: %(default)s)")
    e.add_argument("--eval-text-prep", choices=TEXT_PREPS, default=EvalSpec.text_prep,
                   help="clean (default): headings dropped, paragraphs joined, every token scored; paper: the "
                        "published study's matched evaluator (headings kept, words re-joined by spaces, the token "
                        "at each window's previous end never scored); paper-gpt2: its GPT-2-Medium evaluator (the "
                        "same text, every token scored, each window's mean loss times its new tokens; with "
                        "--eval-max-words 20000) (docs/paper_modes.md)")
    add_data_arguments(p, prefix="calib-", what="calibration windows of the calibration-based guides")
    output_arg(p, "--agreement-out", metavar="FILE.parquet", help="also write the guides' agreement statistics")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")

    a = command(sub, "aggregate-pruning", run_aggregate)
    input_arg(a, "--inputs", what="pruning file", nargs="+", required=True, metavar="FILE.parquet", help="per-checkpoint pruning files")
    input_arg(a, "--agreement-inputs", what="agreement file", nargs="*", default=[], metavar="FILE.parquet",
                   help="per-checkpoint agreement files")
    output_arg(a, "--agreement-out", metavar="FILE.parquet", help="combined agreement table")
    a.add_argument("--bootstrap", type=int, default=default(AggregatePruningJob, "n_boot"),
                   help="bootstrap resamples for the CIs (default: %(default)s)")
    output_arg(a, "--out", required=True, metavar="FILE.parquet", help="combined pruning table")

    f = command(sub, "plot-pruning", run_plot)
    f.add_argument("kind", choices=["delta", "ir-panel", "ir-trajectory", "agreement", "rank-confusion"],
                   help="delta: delta PPL vs budget for one checkpoint; ir-panel: interchange- minus "
                        "replacement-guided cost vs budget, one line per model; ir-trajectory: the same vs training "
                        "step; agreement: the guides' rank agreement; rank-confusion: one guide's ranks against the "
                        "deletion ranking")
    input_arg(f, "--input", what="pruning table", required=True, metavar="FILE.parquet",
                   help="pruning table (agreement, rank-confusion: the agreement table)")
    f.add_argument("--model", help="model label (delta, ir-trajectory, agreement, rank-confusion)")
    f.add_argument("--revision", help="revision label (delta, agreement, rank-confusion)")
    f.add_argument("--guide", default="bi", help="rank-confusion: the guide against the deletion ranking (default: bi)")
    f.add_argument("--bootstrap", type=int, default=1000, help="resamples for the cost-difference CI (default: 1000)")
    f.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    add_output_arguments(f)


def prune_description() -> str:
    """``swapkl prune --help``'s description: :func:`run_prune`'s docstring and every selection rule of the guide
    registry."""
    rules = "; ".join(f"{g.name}: {g.label}" for g in registered() if g.name != "base")
    return f"{inspect.getdoc(run_prune)}\n\nSelection rules, in table order: {rules}."


def eval_spec(args) -> EvalSpec:
    return EvalSpec(text_file=args.eval_text_file, dataset=args.eval_dataset, dataset_config=args.eval_dataset_config,
                    split=args.eval_split, window=args.eval_window, stride=args.eval_stride,
                    max_words=args.eval_max_words or None, text_fields=args.eval_text_fields,
                    text_prep=args.eval_text_prep)


def job(args) -> PruneJob:
    """The pruning job of the command line's options (each option named like a field of the job gives it)."""
    return PruneJob(**PruneJob.fields_from(
        vars(args), probe_files=tuple(args.probe), repr_file=args.repr, eval_data=eval_spec(args),
        calib_data=data_spec(args, "calib-"), metadata=label_metadata(args), placement=placement(args),
        selection=SelectionOptions(random_interior=not args.random_include_ends, guides=args.guides)))


def aggregate_job(args) -> AggregatePruningJob:
    """The aggregate-pruning job of the command line's options."""
    return AggregatePruningJob(inputs=args.inputs, out=args.out, agreement_inputs=args.agreement_inputs,
                               agreement_out=args.agreement_out, n_boot=args.bootstrap)


def run_prune(args) -> None:
    """Remove blocks of one checkpoint by every selection rule of the guide registry (those guided by its probe
    files, the representation and calibration baselines, random draws), for every budget; measure
    sliding-window perplexity on held-out text and KL against the base model on the probe windows; write one
    Parquet file (`swapkl aggregate-pruning` adds the bootstrap confidence intervals)."""
    from swapkl.pruning.prune import run_pruning  # torch: imported when the command runs, not for --help

    run_pruning(job(args))


def run_aggregate(args) -> None:
    """Concatenate per-checkpoint pruning (and agreement) files into results/pruning.parquet (and an agreement
    table), with 95% bootstrap CIs over windows, resampled with the seed each `swapkl prune` run recorded."""
    aggregate_pruning(aggregate_job(args))


#: plot-pruning KIND -> (the figure of ``swapkl figures``, the name of its table input)
PLOT_ALIASES = {"delta": ("pruning_cost", "pruning"), "ir-panel": ("pruning_difference", "pruning"),
                "ir-trajectory": ("pruning_trajectory", "pruning"), "agreement": ("pruning_agreement", "agreement"),
                "rank-confusion": ("rank_confusion", "agreement")}


def run_plot(args) -> None:
    """Draw one pruning figure from results/pruning.parquet or an agreement table: an alias of `swapkl figures`
    (delta: pruning_cost; ir-panel: pruning_difference; ir-trajectory: pruning_trajectory; agreement:
    pruning_agreement; rank-confusion: rank_confusion), which draws it."""
    kind, table = PLOT_ALIASES[args.kind]
    wildcards = {}
    for name in figures()[kind].wildcards:
        if getattr(args, name) is None:
            raise SwapKLError(f"plot-pruning {args.kind} needs --{name}")
        wildcards[name] = getattr(args, name)
    draw_figure(kind, {table: args.input}, args.out_png, args.out_pdf, wildcards,
                {"n_boot": args.bootstrap, "seed": args.seed, "guide": args.guide})