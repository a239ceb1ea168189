"""``swapkl probe``: measure the KL of every variant of the chosen probe protocols for one checkpoint."""

from __future__ import annotations

from swapkl.commands.arguments import (
    add_data_arguments,
    add_forward_arguments,
    add_model_arguments,
    add_placement_arguments,
    command,
    data_spec,
    label_metadata,
    placement,
)
from swapkl.commands.paths import output_arg
from swapkl.model.kl_options import KLOptions
from swapkl.probes.protocols import protocols_help
from swapkl.model.model_job import default
from swapkl.probes.probe_jobs import ProbeJob


def add_parser(sub) -> None:
    p = command(sub, "probe", run)
    add_model_arguments(p, label=True)
    add_forward_arguments(p)
    add_placement_arguments(p)
    p.add_argument("--protocols", default="replacement,interchange,deletion", metavar="P[,P...]",
                   help=f"comma-separated probe protocols (swapkl.probes.protocols): {protocols_help()} "
                        "(default: replacement,interchange,deletion)")
    p.add_argument("--pairs", default=default(ProbeJob, "pairs"), help="adjacent | within:K | all (default: %(default)s)")
    p.add_argument("--layers", help="restrict variants to these blocks, e.g. 0,3,5 (default: all blocks)")
    p.add_argument("--rope", choices=("on", "off"), default=default(ProbeJob, "rope"),
                   help="off: every rotary angle zero (cos=1, sin=0) for base and variants; RoPE models only")
    add_data_arguments(p)
    k = p.add_argument_group("KL (default: every valid position, token-weighted mean)")
    k.add_argument("--kl-positions", choices=["all", "last"], default=KLOptions.positions,
                   help="all (default) or last: only the last valid position of each window (last-token KL)")
    k.add_argument("--kl-clamp", action="store_true", help="clamp each position's KL at 0 before averaging")
    k.add_argument("--kl-average", choices=["tokens", "prompts"], default=KLOptions.average,
                   help="tokens (default): over every counted position; prompts: each window's mean, then the "
                        "mean over windows")
    output_arg(p, "--progress-file", what="progress file", help="persist progress here so a killed run resumes")
    output_arg(p, "--repr-out", metavar="FILE.parquet", help="also write BI / angular-distance rows here")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def job(args) -> ProbeJob:
    """The probe job of the command line's options (each option named like a field of the job gives it)."""
    return ProbeJob(**ProbeJob.fields_from(
        vars(args), protocols=tuple(args.protocols.split(",")), data=data_spec(args),
        progress_path=args.progress_file, metadata=label_metadata(args), placement=placement(args),
        kl_options=KLOptions(positions=args.kl_positions, clamp=args.kl_clamp, average=args.kl_average)))


def run(args) -> None:
    """Measure KL(p_base || p_variant) for every variant of the chosen probe protocols (--protocols lists them)
    on one checkpoint and write one long-format Parquet file (means and per-sequence sums; `swapkl aggregate`
    adds the bootstrap confidence intervals)."""
    from swapkl.probes.probe import run_probe  # torch: imported when the command runs, not for --help

    run_probe(job(args))
