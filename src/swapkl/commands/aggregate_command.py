"""``swapkl aggregate``: probe Parquets -> one dataset with directed, pair, summary and repr rows."""

from __future__ import annotations

import pyarrow.parquet as pq

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.model.model_job import default
from swapkl.probes.aggregate import AggregateJob, aggregate
from swapkl.tables import provenance


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


def recorded_pair_sets(probe_files: list[str]) -> dict[str, list[str]]:
    """{model: the pair sets its probe files were measured on}, from each file's provenance (``pairs``) and its
    rows' ``model`` label: what ``--pair-sets`` defaults to."""
    out: dict[str, list[str]] = {}
    for path in probe_files:
        pairs = provenance.read(path).get("pairs")
        models = set(pq.read_table(path, columns=["model"]).column("model").to_pylist())
        if not pairs or len(models) != 1:
            raise SwapKLError(f"probe file {path!r} records no pair set for one model: give --pair-sets")
        sets = out.setdefault(models.pop(), [])
        if pairs not in sets:
            sets.append(pairs)
    return out


def add_parser(sub) -> None:
    p = command(sub, "aggregate", run, show_defaults=True)
    input_arg(p, "files", what="probe file", nargs="*", default=[], metavar="FILE",
              help="probe Parquet files (the same as --probe)")
    input_arg(p, "--probe", what="probe file", nargs="+", default=[], metavar="FILE", help="probe Parquet files")
    input_arg(p, "--repr", what="representation file", nargs="*", default=[], metavar="FILE",
                   help="representation (BI / angular distance) Parquet files")
    p.add_argument("--pair-sets", action="append", metavar="MODEL=SET[,SET...]",
                   help="pair sets to summarise per model (adjacent, within:K, all); repeat for each model, "
                        "e.g. --pair-sets pythia-410m=adjacent,within:3 (default: the pair set each model's probe "
                        "files record)")
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
    probes = list(args.files) + list(args.probe)
    if not probes:
        raise SwapKLError("give the probe files to aggregate (as arguments or after --probe)")
    pair_sets = parse_pair_sets(args.pair_sets) if args.pair_sets else recorded_pair_sets(probes)
    return AggregateJob(probe_files=probes, repr_files=args.repr, out=args.out, pair_sets=pair_sets,
                        n_boot=args.bootstrap, seed=args.bootstrap_seed)
