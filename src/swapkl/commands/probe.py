"""``swapkl probe``: measure replacement / interchange / deletion KL for one checkpoint."""

from __future__ import annotations

from swapkl.commands.arguments import (add_data_arguments, add_model_arguments, add_placement_arguments, command,
                                       data_spec, placement)


def add_parser(sub) -> None:
    p = command(sub, "probe", run, "measure swap/deletion KL for one checkpoint")
    add_model_arguments(p)
    add_placement_arguments(p)
    p.add_argument("--protocols", default="replacement,interchange,deletion",
                   help="comma-separated subset of replacement,interchange,deletion,averaging,head_interchange "
                        "(default: replacement,interchange,deletion)")
    p.add_argument("--pairs", default="adjacent", help="adjacent | within:K | all (default: adjacent)")
    p.add_argument("--layers", help="restrict variants to these blocks, e.g. 0,3,5 (default: all blocks)")
    add_data_arguments(p)
    p.add_argument("--progress-file", help="persist progress here so a killed run resumes")
    p.add_argument("--repr-out", metavar="FILE.parquet", help="also write BI / angular-distance rows here")
    p.add_argument("--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run(args) -> None:
    """Measure KL(p_base || p_variant) for replacement, interchange, deletion, weight averaging and head-level
    interchange variants of one checkpoint and write one long-format Parquet file (means and per-sequence sums;
    `swapkl aggregate` adds the bootstrap confidence intervals)."""
    from swapkl.probe import run_probe

    run_probe(args.model, args.out, revision=args.revision, protocols=args.protocols, pairs=args.pairs,
              data=data_spec(args), dtype=args.dtype, device=args.device, batch_size=args.batch_size,
              repr_out=args.repr_out,
              progress_path=args.progress_file, layers=args.layers, allow_pickle=args.allow_pickle,
              trust_remote_code=args.trust_remote_code, chunk_tokens=args.chunk_tokens,
              placement=placement(args))
