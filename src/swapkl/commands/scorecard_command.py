"""``swapkl scorecard``: the reproduction scorecard from whichever result tables exist."""

from __future__ import annotations

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.paper.scorecard import TABLES, write_scorecard


def add_parser(sub) -> None:
    p = command(sub, "scorecard", run_scorecard)
    for name in TABLES:  # one option per registered table, e.g. --relevance-stats for relevance_stats
        input_arg(p, "--" + name.replace("_", "-"), what=f"{name.replace('_', ' ')} table", nargs="+",
                  metavar="FILE.parquet", help=f"the {name.replace('_', ' ')} result table, if it exists (several "
                                               "files are read as one table)")
    input_arg(p, "--registry", what="published-numbers registry", metavar="FILE.yaml", help="published-numbers registry (default: swapkl's own)")
    output_arg(p, "--html", what="HTML table", metavar="FILE.html", help="also write the scorecard as an HTML table")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run_scorecard(args) -> None:
    """Compare every published number of the reproduced papers (swapkl's registry) with swapkl's value computed
    from the given result tables (one option per table of swapkl.paper.scorecard.TABLES): status `reproduced`
    (within the entry's tolerance), `differs`, or `not run` with the reason (e.g. `needs meta-llama/Llama-3.1-8B`
    when no table holds that model's rows)."""
    write_scorecard(args.out, html_out=args.html, registry=args.registry,
                    **{name: getattr(args, name) for name in TABLES})
