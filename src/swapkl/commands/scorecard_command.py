"""``swapkl scorecard``: the reproduction scorecard from whichever result tables exist."""

from __future__ import annotations

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.paper.scorecard import write_scorecard


def add_parser(sub) -> None:
    p = command(sub, "scorecard", run_scorecard, "one row per published number: swapkl's value and its status")
    input_arg(p, "--pruning", what="pruning table", metavar="FILE.parquet", help="results/pruning.parquet (if it exists)")
    input_arg(p, "--aggregate", what="aggregate", metavar="FILE.parquet", help="results/swapkl.parquet (if it exists)")
    input_arg(p, "--agreement", what="agreement table", metavar="FILE.parquet", help="results/pruning_agreement.parquet (if it exists)")
    input_arg(p, "--relevance-stats", what="relevance statistics", metavar="FILE.parquet", help="results/relevance_stats.parquet (if it exists)")
    input_arg(p, "--downstream", what="downstream table", metavar="FILE.parquet", help="results/downstream.parquet (if it exists)")
    input_arg(p, "--registry", what="published-numbers registry", metavar="FILE.yaml", help="published-numbers registry (default: swapkl's own)")
    output_arg(p, "--html", what="HTML table", metavar="FILE.html", help="also write the scorecard as an HTML table")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run_scorecard(args) -> None:
    """Compare every published number of the reproduced papers (swapkl's registry) with swapkl's value computed
    from the given result tables: status `reproduced` (within the entry's tolerance), `differs`, or `not run`
    with the reason (e.g. `needs meta-llama/Llama-3.1-8B` when no table holds that model's rows)."""
    write_scorecard(args.out, html_out=args.html, registry=args.registry, pruning=args.pruning,
                    aggregate=args.aggregate, agreement=args.agreement, relevance_stats=args.relevance_stats,
                    downstream=args.downstream)
