"""``swapkl scorecard``: the reproduction scorecard from whichever result tables exist."""

from __future__ import annotations

from swapkl.commands.arguments import command


def add_parser(sub) -> None:
    p = command(sub, "scorecard", run_scorecard, "one row per published number: swapkl's value and its status")
    p.add_argument("--pruning", metavar="FILE.parquet", help="results/pruning.parquet (if it exists)")
    p.add_argument("--aggregate", metavar="FILE.parquet", help="results/swapkl.parquet (if it exists)")
    p.add_argument("--agreement", metavar="FILE.parquet", help="results/pruning_agreement.parquet (if it exists)")
    p.add_argument("--relevance-stats", metavar="FILE.parquet", help="results/relevance_stats.parquet (if it exists)")
    p.add_argument("--registry", metavar="FILE.yaml", help="published-numbers registry (default: swapkl's own)")
    p.add_argument("--html", metavar="FILE.html", help="also write the scorecard as an HTML table")
    p.add_argument("--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run_scorecard(args) -> None:
    """Compare every published number of the reproduced papers (swapkl's registry) with swapkl's value computed
    from the given result tables: status `reproduced` (within the entry's tolerance), `differs`, or `not run`
    with the reason (e.g. `needs meta-llama/Llama-3.1-8B` when no table holds that model's rows)."""
    from swapkl.scorecard import write_scorecard

    write_scorecard(args.out, html_out=args.html, registry=args.registry, pruning=args.pruning,
                    aggregate=args.aggregate, agreement=args.agreement, relevance_stats=args.relevance_stats)
