"""``swapkl relevance``, ``aggregate-relevance``, ``relevance-stats`` and ``plot-relevance``: accuracy-based layer
relevance (AccRel) per task."""

from __future__ import annotations

from swapkl.commands.arguments import (add_data_arguments, add_model_arguments, add_placement_arguments, command,
                                       data_spec, placement)
from swapkl.commands.figures_command import add_output_arguments, draw_figure
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.model.model_job import default
from swapkl.relevance.relevance_jobs import RelevanceJob
from swapkl.relevance.relevance_stats import summarise_relevance
from swapkl.tables.combine import aggregate_relevance


def add_parser(sub) -> None:
    p = command(sub, "relevance", run)
    add_model_arguments(p, label=True)
    add_placement_arguments(p)
    input_arg(p, "--tasks", what="task file", nargs="*", default=[], metavar="TASK.yaml", help="multiple-choice task files")
    p.add_argument("--lm-eval-tasks", nargs="*", default=[], metavar="NAME",
                   help="task names lm-eval loads from the dataset hub (e.g. arc_easy hellaswag mmlu; zero-shot "
                        "multiple choice; groups scored per subtask)")
    p.add_argument("--lm-name", default=default(RelevanceJob, "lm_name"),
                   help="task name of the language-modelling data (default: %(default)s)")
    add_data_arguments(p, prefix="lm-", what="language-modelling text", optional=True)
    input_arg(p, "--pruning", what="pruning table", metavar="FILE.parquet",
                   help="this checkpoint's pruning table (swapkl prune): also score each guide's pruned model at "
                        "each budget (rows with null layer and the guide, budget and removed_layers)")
    p.add_argument("--pruning-guides", nargs="+", metavar="GUIDE",
                   help="with --pruning: score only these guides' pruned models (default: every guide)")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")

    a = command(sub, "aggregate-relevance", run_aggregate)
    input_arg(a, "--inputs", what="relevance file", nargs="+", required=True, metavar="FILE.parquet", help="relevance files")
    output_arg(a, "--out", required=True, metavar="FILE.parquet", help="combined table")

    st = command(sub, "relevance-stats", run_stats)
    input_arg(st, "--input", what="relevance table", required=True, metavar="FILE.parquet", help="relevance table")
    input_arg(st, "--aggregate", what="aggregate", required=True, metavar="FILE.parquet", help="results/swapkl.parquet (BI rows)")
    output_arg(st, "--out", required=True, metavar="FILE.parquet", help="statistics table")

    f = command(sub, "plot-relevance", run_plot)
    f.add_argument("kind", choices=["cosine", "zscores", "confusion"],
                   help="cosine: cosine similarity vs AccRel per block; zscores: per-task z-scores of AccRel; "
                        "confusion: rank confusion of AccRel against cosine")
    input_arg(f, "--input", what="relevance table", required=True, metavar="FILE.parquet",
                   help="relevance table (confusion: relevance-stats table)")
    input_arg(f, "--aggregate", what="aggregate", metavar="FILE.parquet", help="results/swapkl.parquet (cosine only)")
    f.add_argument("--model", required=True, help="model label")
    f.add_argument("--revision", required=True, help="revision label")
    add_output_arguments(f)


def run(args) -> None:
    """Score multiple-choice tasks (lm-eval task YAML + local JSONL; acc and acc_norm) and, optionally,
    language-modelling text (next-token accuracy) for the base model and every single-block deletion on the
    probe engine, and write AccRel per block and task: 1 - max(acc_-l - r, 0) / max(acc - r, 0), NaN where the
    base model is not above chance r."""
    from swapkl.relevance.accrel import run_relevance  # torch: imported when the command runs, not for --help

    run_relevance(job(args))


def job(args) -> RelevanceJob:
    """The relevance job of the command line's options (each option named like a field of the job gives it)."""
    has_lm = any(getattr(args, f"lm_{k}") for k in ("tokens", "dataset", "text_file"))
    return RelevanceJob(**RelevanceJob.fields_from(
        vars(args), task_files=args.tasks, lm_data=data_spec(args, "lm-") if has_lm else None,
        harness_tasks=args.lm_eval_tasks, placement=placement(args)))


def run_aggregate(args) -> None:
    """Concatenate per-checkpoint relevance files into results/relevance.parquet."""
    aggregate_relevance(args.inputs, args.out)


#: plot-relevance KIND -> (the figure of ``swapkl figures``, the name of its ``--input`` table)
PLOT_ALIASES = {"cosine": ("relevance_cosine", "relevance"), "zscores": ("relevance_zscores", "relevance"),
                "confusion": ("relevance_confusion", "stats")}


def run_plot(args) -> None:
    """cosine: each block's cosine similarity (1 - BI, from the aggregate) vs its AccRel per task, with Pearson R;
    zscores: per-task z-scores of AccRel; confusion: rank confusion of AccRel against BI per task (--input: the
    relevance-stats table). An alias of `swapkl figures` (relevance_cosine, relevance_zscores,
    relevance_confusion), which draws it."""
    kind, table = PLOT_ALIASES[args.kind]
    inputs = {table: args.input}
    if args.kind == "cosine":
        if not args.aggregate:
            raise SwapKLError("plot-relevance cosine needs --aggregate (results/swapkl.parquet)")
        inputs["aggregate"] = args.aggregate
    draw_figure(kind, inputs, args.out_png, args.out_pdf, {"model": args.model, "revision": args.revision}, {})


def run_stats(args) -> None:
    """Per checkpoint and task: Pearson R of AccRel and BI (and in the paper's sign), exact-rank and severe
    misranking with their chance levels and permutation p-values (boundary blocks excluded), and Cochran's Q
    test of task dependence (results/relevance_stats.parquet)."""
    summarise_relevance(args.input, args.aggregate, args.out)
