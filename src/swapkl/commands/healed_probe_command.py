"""``swapkl healed-probe`` (the third test) and ``swapkl test-agreement`` (how much every test disagrees)."""

from __future__ import annotations

import json

from swapkl.commands.arguments import (add_data_arguments, add_label_arguments, add_model_arguments, command,
                                      data_spec)
from swapkl.commands.heal_command import add_heal_arguments, heal_settings, train_text
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.model.model_job import default
from swapkl.probes.disagreement import DisagreementJob, run_test_agreement
from swapkl.recovery.healed_jobs import SELECTIONS, HealedProbeJob


def add_parser(sub) -> None:
    p = command(sub, "healed-probe", run_healed)
    add_model_arguments(p, engine=False)
    add_label_arguments(p)
    p.add_argument("--batch-size", type=int, default=default(HealedProbeJob, "batch_size"),
                   help="probe windows per forward batch (default: %(default)s)")
    input_arg(p, "--probe-files", what="probe file", nargs="+", required=True, metavar="FILE",
                   help="the checkpoint's replacement / interchange / deletion tables (swapkl probe, same windows)")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output table")
    p.add_argument("--protocols", default=",".join(default(HealedProbeJob, "protocols")),
                   help="comma-separated healed protocols (default: all three)")
    p.add_argument("--pair-selection", default=default(HealedProbeJob, "selection"), choices=SELECTIONS,
                   help="which pairs / blocks: k lowest and highest per base protocol, k random, or all")
    p.add_argument("--k", type=int, default=default(HealedProbeJob, "k"),
                   help="pairs / blocks per end (extremes) or in all (random)")
    p.add_argument("--select-seed", type=int, default=default(HealedProbeJob, "select_seed"),
                   help="seed of the random selection")
    p.add_argument("--curve-steps", default=",".join(map(str, default(HealedProbeJob, "curve_steps"))), metavar="S,S",
                   help="step counts at which KL is also measured")
    add_heal_arguments(p)
    add_data_arguments(p)

    q = command(sub, "test-agreement", run_agreement)
    input_arg(q, "--probe-files", what="probe file", nargs="+", required=True, metavar="FILE",
              help="the checkpoint's probe tables")
    input_arg(q, "--repr-file", what="representation file", metavar="FILE", help="its representation table (BI, angular distance)")
    input_arg(q, "--healed-file", what="healed-probe file", metavar="FILE", help="its healed-probe table")
    input_arg(q, "--relevance-file", what="relevance file", metavar="FILE", help="its accuracy-relevance table")
    input_arg(q, "--member", what="seed family member's probe file", named=True, action="append", default=[],
              metavar="NAME=FILE", help="a probe table of a seed family member; repeat for each table and member")
    output_arg(q, "--out", required=True, metavar="FILE.parquet", help="output table")
    q.add_argument("--n-boot", type=int, default=default(DisagreementJob, "n_boot"),
                   help="bootstrap resamples over windows (default: %(default)s)")
    q.add_argument("--seed", type=int, default=default(DisagreementJob, "seed"),
                   help="seed of the resampling (default: %(default)s)")


def run_healed(args) -> None:
    """Build each selected variant as a standalone model, heal it toward the base model's own next-token
    distribution (KL distillation) on the training text, which must be another source than the probe
    windows, and write KL on the probe windows after 0, each --curve-steps and all steps."""
    from swapkl.recovery.healed import run_healed_probe  # torch: imported when the command runs

    df = run_healed_probe(job(args))
    final = df[df["final"]]
    print(json.dumps({"out": args.out, "variants": int(len(final)),
                      "mean_fraction_recovered": float(final["fraction_recovered"].mean())}))


def job(args) -> HealedProbeJob:
    """The healed-probe job of the command line's options (each option named like a field of the job gives it)."""
    return HealedProbeJob(**HealedProbeJob.fields_from(
        vars(args), data=data_spec(args), calibration=train_text(args), settings=heal_settings(args),
        protocols=tuple(args.protocols.split(",")), selection=args.pair_selection,
        curve_steps=tuple(int(x) for x in args.curve_steps.split(",") if x.strip())))


def run_agreement(args) -> None:
    """Spearman and Kendall between the rankings of every two tests (pairs: replacement max and one
    direction, interchange, healed protocols, seed family members; blocks: deletion, healed deletion, BI,
    angular distance, accuracy relevance, pair tests as block scores), with bootstrap CIs over windows."""
    df = run_test_agreement(agreement_job(args))
    print(json.dumps({"out": args.out, "comparisons": int(len(df))}))


def agreement_job(args) -> DisagreementJob:
    """The test-agreement job of the command line's options (``--member NAME=FILE``, repeated)."""
    members: dict[str, list[str]] = {}
    for item in args.member:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise SwapKLError(f"--member {item!r}: expected NAME=FILE, e.g. tiny-s1=results/probes/tiny-s1/main/"
                              "interchange.parquet")
        members.setdefault(name.strip(), []).append(path.strip())
    return DisagreementJob(probe_files=args.probe_files, out=args.out, repr_file=args.repr_file,
                           healed_file=args.healed_file, relevance_file=args.relevance_file, members=members or None,
                           n_boot=args.n_boot, seed=args.seed)
