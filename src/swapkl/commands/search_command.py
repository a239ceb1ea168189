"""``swapkl optimal-search``: greedy, beam, best-first and exhaustive removal-set search compared."""

from __future__ import annotations

from swapkl.commands.arguments import (add_data_arguments, add_model_arguments, add_placement_arguments, command,
                                       data_spec, default_option, label_metadata, placement)
from swapkl.commands.paths import output_arg
from swapkl.commands.prune_command import _budgets
from swapkl.model.model_job import default
from swapkl.studies.optimal_search.jobs import SearchJob


def add_parser(sub) -> None:
    p = command(sub, "optimal-search", run_search)
    add_model_arguments(p, label=True)
    add_placement_arguments(p)
    add_data_arguments(p, prefix="calib-")
    budgets = default(SearchJob, "budgets")
    p.add_argument("--budgets", type=_budgets, default=list(budgets),
                   help=f"numbers of blocks to remove: 1-3 or 1,2,4 (default: {','.join(map(str, budgets))})")
    default_option(p, "--beam-width", SearchJob, "width of the beam search (default: %(default)s)")
    default_option(p, "--max-evals", SearchJob, "best-first stops with an error past this many evaluations; "
                                                "exhaustive enumeration runs only where C(L, n) is at most this "
                                                "(default: %(default)s)")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet table")


def run_search(args) -> None:
    """Remove each budget's blocks four ways, scoring removal sets by the calibration NLL of the pruned model
    on the engine: greedy (SLEB-iterative), beam search, best-first search (optimal if removing a further
    block never lowers the NLL; its bound is the certificate under that assumption) and exhaustive
    enumeration (optimal, certified). Each row has the set, its NLL, the evaluations the method spent and
    its gap to the best set found; one Parquet table with provenance."""
    from swapkl.studies.optimal_search.run import run_optimal_search  # torch: when the command runs, not for --help

    run_optimal_search(job(args))


def job(args) -> SearchJob:
    """The search job of the command line's options (each option named like a field of the job gives it)."""
    return SearchJob(**SearchJob.fields_from(vars(args), calibration=data_spec(args, "calib-"),
                                             metadata=label_metadata(args), placement=placement(args)))
