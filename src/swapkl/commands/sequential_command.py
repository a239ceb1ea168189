"""``swapkl probe-sequential``: probe one checkpoint on a pool of windows in batches, each variant only while a
decision it takes part in is still open (swapkl.studies.sequential.probe)."""

from __future__ import annotations

import argparse

from swapkl.commands.arguments import (add_data_arguments, add_model_arguments, add_placement_arguments, command,
                                      data_spec, label_metadata, placement)
from swapkl.commands.paths import output_arg
from swapkl.commands.prune_command import _budgets
from swapkl.stats.sequential_design import Decisions, Design
from swapkl.studies.sequential.jobs import SequentialJob


def _halfwidth(text: str) -> tuple[str, float]:
    name, _, rel = text.rpartition("=")
    try:
        value = float(rel)
    except ValueError:
        value = float("nan")
    if not name or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"give PAIR_SET=REL with REL in (0, 1), e.g. adjacent=0.1, not {text!r}")
    return name, value


def add_parser(sub) -> None:
    p = command(sub, "probe-sequential", run)
    add_model_arguments(p, label=True)
    add_placement_arguments(p)
    p.add_argument("--pairs", default="adjacent", help="adjacent | within:K | all (default: %(default)s)")
    add_data_arguments(p, what="the pool of probe windows (--n-seqs: its size)")
    d, s = Design(), Decisions()
    g = p.add_argument_group("design (swapkl.stats.sequential)")
    g.add_argument("--first", type=int, default=d.first, help="windows of the first look (default: %(default)s)")
    g.add_argument("--batch", type=int, default=d.batch, help="windows added at each later look (default: %(default)s)")
    g.add_argument("--cap", type=int, default=d.cap,
                   help="most windows any variant gets; the pool bounds it too (default: %(default)s)")
    g.add_argument("--confidence", type=float, default=d.confidence,
                   help="confidence of every interval decision, whatever the number of looks (default: %(default)s)")
    q = p.add_argument_group("decisions (at least one)")
    q.add_argument("--no-signs", dest="signs", action="store_false",
                   help="do not decide the sign of each pair's gap (decided by default)")
    q.add_argument("--halfwidth", type=_halfwidth, action="append", default=[], metavar="PAIR_SET=REL",
                   help="the mean gap of PAIR_SET to a relative half-width REL, e.g. adjacent=0.1 (repeatable)")
    q.add_argument("--sets", default="", metavar="GUIDE[,GUIDE]",
                   help="guides whose removal sets must be stable: interchange, replacement_max, replacement_mean, "
                        "deletion (default: none)")
    q.add_argument("--budgets", type=_budgets, default=list(s.budgets), help="budgets of --sets: 1-3 or 1,2,4")
    q.add_argument("--spacing", type=int, default=s.spacing, help="blocks between removed ones (default: 1)")
    q.add_argument("--stability", type=float, default=s.stability,
                   help="share of window resamples that must pick the same set (default: %(default)s)")
    q.add_argument("--bootstrap", type=int, default=s.n_boot, help="resamples of the stability (default: %(default)s)")
    q.add_argument("--stability-seed", type=int, default=s.seed,
                   help="seed of the stability resamples (default: %(default)s)")
    output_arg(p, "--progress-file", what="progress file",
               help="persist finished results here so that a killed run started again resumes")
    output_arg(p, "--decisions-out", required=True, metavar="FILE.parquet", help="the decisions table")
    output_arg(p, "--out", required=True, metavar="FILE.parquet",
               help="the probe table: one row per variant, n_seqs its own windows")


def job(args) -> SequentialJob:
    """The sequential probe's job of the command line's options."""
    design = Design(first=args.first, batch=args.batch, cap=args.cap, confidence=args.confidence)
    decisions = Decisions(signs=args.signs, halfwidth=dict(args.halfwidth),
                          sets=tuple(g for g in args.sets.split(",") if g), budgets=tuple(args.budgets),
                          spacing=args.spacing, stability=args.stability, n_boot=args.bootstrap,
                          seed=args.stability_seed)
    return SequentialJob(**SequentialJob.fields_from(
        vars(args), data=data_spec(args), design=design, decisions=decisions, progress_path=args.progress_file,
        metadata=label_metadata(args), placement=placement(args)))


def run(args) -> None:
    """Probe one checkpoint sequentially: windows from the pool in batches, every decision re-evaluated after each
    batch, each variant measured only while a decision it takes part in is open, up to the cap; writes the probe
    table and the decisions table (state `holds` or `undecided`, estimate, interval, windows)."""
    from swapkl.studies.sequential.probe import run_sequential_probe  # torch: when the command runs

    result = run_sequential_probe(job(args))
    design = result.design
    held = len(result.decided) - len(result.undecided)
    print(f"{held} of {len(result.decided)} decisions hold at {design.confidence:.0%}; "
          f"{len(result.undecided)} undecided at the cap; {result.variant_windows} variant-windows over "
          f"{len(result.evidence.tokens)} windows (uniform: {len(result.variants) * len(result.evidence.tokens)})")
