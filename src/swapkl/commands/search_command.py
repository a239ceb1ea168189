"""``swapkl optimal-search``: greedy, beam, best-first and exhaustive removal-set search compared."""

from __future__ import annotations

from swapkl.commands.arguments import add_data_arguments, add_model_arguments, command, data_spec
from swapkl.commands.paths import output_arg
from swapkl.commands.prune_command import _budgets
from swapkl.pruning.search_cost import run_optimal_search


def add_parser(sub) -> None:
    p = command(sub, "optimal-search", run_search)
    add_model_arguments(p)
    add_data_arguments(p, prefix="calib-")
    p.add_argument("--budgets", type=_budgets, default=[1, 2, 3],
                   help="numbers of blocks to remove: 1-3 or 1,2,4 (default: 1-3)")
    p.add_argument("--beam-width", type=int, default=3, help="width of the beam search (default: 3)")
    p.add_argument("--max-evals", type=int, default=5000,
                   help="best-first stops with an error past this many evaluations; exhaustive enumeration "
                        "runs only where C(L, n) is at most this (default: 5000)")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet table")


def run_search(args) -> None:
    """Remove each budget's blocks four ways, scoring removal sets by the calibration NLL of the pruned model
    on the engine: greedy (SLEB-iterative), beam search, best-first search (optimal if removing a further
    block never lowers the NLL; its bound is the certificate under that assumption) and exhaustive
    enumeration (optimal, certified). Each row has the set, its NLL, the evaluations the method spent and
    its gap to the best set found; one Parquet table with provenance."""
    run_optimal_search(args.model, data_spec(args, "calib-"), args.out, budgets=args.budgets,
                       revision=args.revision, beam_width=args.beam_width, max_evals=args.max_evals,
                       dtype=args.dtype, device=args.device, batch_size=args.batch_size,
                       chunk_tokens=args.chunk_tokens, allow_pickle=args.allow_pickle,
                       trust_remote_code=args.trust_remote_code)
