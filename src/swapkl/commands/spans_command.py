"""``swapkl spans``: the middle-span experiments (skip, reverse, shuffle, repeat, parallel) of one checkpoint."""

from __future__ import annotations

from swapkl.commands.arguments import (add_data_arguments, add_model_arguments, add_placement_arguments, command,
                                       data_spec, default_option, label_metadata, placement)
from swapkl.commands.paths import output_arg
from swapkl.errors import SwapKLError
from swapkl.model.model_job import default
from swapkl.studies.spans.jobs import SpansJob


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SwapKLError(f"--loops {text!r}: expected integers like 2,3") from None


def add_parser(sub) -> None:
    p = command(sub, "spans", run)
    add_model_arguments(p, label=True)
    add_placement_arguments(p)
    variants = ",".join(default(SpansJob, "variants"))
    p.add_argument("--variants", default=variants,
                   help=f"comma-separated subset of {variants} (default: all)")
    loops = default(SpansJob, "loops")
    p.add_argument("--loops", type=_ints, default=list(loops),
                   help=f"loop counts of looped_parallel, e.g. 2,3 (default: {','.join(map(str, loops))})")
    default_option(p, "--span-seed", SpansJob, "seed of the shuffled orders (default: %(default)s)", name="seed")
    default_option(p, "--min-start", SpansJob, "smallest s of the spans [s, L-s) (default: %(default)s)")
    default_option(p, "--min-width", SpansJob, "narrowest span measured, in blocks (default: %(default)s)")
    add_data_arguments(p)
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run(args) -> None:
    """Measure KL(p_base || p_variant) of the span experiments of "Transformer Layers as Painters" on one
    checkpoint: for every symmetric middle span [s, L-s) (s from --min-start while the span holds at least
    --min-width blocks) the span is skipped, reversed, shuffled (seeded), replaced by the middle block
    repeated, or run in parallel (every block reads the span's input, their updates are averaged; looped:
    the parallel step repeated). Writes one Parquet file with the per-window sums behind every mean."""
    from swapkl.studies.spans.run import run_spans  # torch: imported when the command runs, not for --help

    run_spans(job(args))


def job(args) -> SpansJob:
    """The span job of the command line's options (each option named like a field of the job gives it)."""
    return SpansJob(**SpansJob.fields_from(
        vars(args), data=data_spec(args), variants=tuple(v.strip() for v in args.variants.split(",") if v.strip()),
        seed=args.span_seed, metadata=label_metadata(args), placement=placement(args)))
