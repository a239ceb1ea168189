"""``swapkl aggregate``: probe Parquets -> one dataset with directed, pair, summary and repr rows."""

from __future__ import annotations

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.model.model_job import default
from swapkl.probes.aggregate import AggregateJob, aggregate


def parse_pair_sets(items: list[str]) -> dict[str, list[str]]:
    """``["pythia-410m=adjacent,within:3", ...]`` -> ``{"pythia-410m": ["adjacent", "within:3"]}``."""
    out: dict[str, list[str]] = {}
    for item in items:
        model, sep, sets = item.partition("=")
        if not sep or not model.strip():
            raise SwapKLError(f"--pair-sets {item!r}: expected MODEL=SET[,SET...], e.g. pythia-410m=adjacent,within:3")
        model = model.strip()
        if model in out:
            raise SwapKLError(f"--pair-sets: model {model!r} given twice")
        out[model] = [s.strip() for s in sets.split(",") if s.strip()]
    return out


def add_parser(sub) -> None:
    p = command(sub, "aggregate", run, show_defaults=True)
    input_arg(p, "--probe", what="probe file", nargs="+", required=True, metavar="FILE", help="probe Parquet files")
    input_arg(p, "--repr", what="representation file", nargs="*", default=[], metavar="FILE",
                   help="representation (BI / angular distance) Parquet files")
    p.add_argument("--pair-sets", action="append", required=True, metavar="MODEL=SET[,SET...]",
                   help="pair sets to summarise per model (adjacent, within:K, all); repeat for each model, "
                        "e.g. --pair-sets pythia-410m=adjacent,within:3")
    p.add_argument("--bootstrap", type=int, default=default(AggregateJob, "n_boot"),
                   help="bootstrap resamples for the CI of the mean gap")
    p.add_argument("--bootstrap-seed", type=int, default=default(AggregateJob, "seed"), help="seed of the bootstrap")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run(args) -> None:
    """Read probe Parquets (one per checkpoint and rule) and representation Parquets, derive per-pair d_repl
    (max and mean of both replacement directions), d_inter, gap, I/R ratio and swap-similarity classes,
    summarise each pair set with a bootstrap CI of the mean gap, flag revisions whose weights duplicate an
    earlier revision, and write one Parquet file."""
    aggregate(job(args))


def job(args) -> AggregateJob:
    """The aggregate job of the command line's options."""
    return AggregateJob(probe_files=args.probe, repr_files=args.repr, out=args.out,
                        pair_sets=parse_pair_sets(args.pair_sets), n_boot=args.bootstrap, seed=args.bootstrap_seed)
