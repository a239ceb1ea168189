"""``swapkl probe``: measure replacement / interchange / deletion KL for one checkpoint."""

from __future__ import annotations

import argparse

from swapkl.data import DataSpec
from swapkl.errors import SwapKLError


# Options that only shape windows cut from text; a token file is used as it is. Their defaults are
# DataSpec's, filled in by data_spec() so that an option given where it has no effect can be refused.
TEXT_ONLY = ("n_seqs", "seq_len", "min_tokens", "data_seed", "text_format", "padding")
DATASET_ONLY = ("dataset_config", "split")


def add_data_arguments(p: argparse.ArgumentParser, prefix: str = "") -> None:
    d = DataSpec()
    g = p.add_argument_group("data (exactly one of --tokens, --dataset, --text-file)")
    g.add_argument(f"--{prefix}tokens", metavar="FILE.npy", help="int array [n_seqs, seq_len]; every position valid")
    g.add_argument(f"--{prefix}dataset", metavar="NAME", help="a `datasets` dataset, e.g. wikitext")
    g.add_argument(f"--{prefix}dataset-config", metavar="CONFIG", help="dataset configuration, e.g. wikitext-2-raw-v1")
    g.add_argument(f"--{prefix}split", help=f"dataset split (default: {d.split})")
    g.add_argument(f"--{prefix}text-file", metavar="FILE", help="local UTF-8 text, paragraphs separated by blank lines")
    g.add_argument(f"--{prefix}n-seqs", type=int, help=f"number of windows (default: {d.n_seqs})")
    g.add_argument(f"--{prefix}seq-len", type=int, help=f"tokens per window (default: {d.seq_len})")
    g.add_argument(f"--{prefix}min-tokens", type=int,
                   help=f"paragraphs shorter than this are skipped (default: {d.min_tokens})")
    g.add_argument(f"--{prefix}seed", dest=f"{prefix.replace('-', '_')}data_seed", type=int,
                   help=f"seed of the window selection (default: {d.seed})")
    g.add_argument(f"--{prefix}text-format", choices=["paragraphs", "lines"],
                   help="--text-file items: paragraphs (blank-line separated, default) or one per line (prompts)")
    g.add_argument(f"--{prefix}padding", choices=["masked", "counted"],
                   help="masked (default) or the paper's compatibility mode: right-padded, no attention mask, "
                        "padding counted as positions")


def data_spec(args, prefix: str = "") -> DataSpec:
    """The DataSpec of the data options; an option that the chosen source ignores is an error."""
    a = lambda k: getattr(args, prefix.replace("-", "_") + k)  # noqa: E731
    flag = lambda k: f"--{prefix}{'seed' if k == 'data_seed' else k.replace('_', '-')}"  # noqa: E731
    ignored = (TEXT_ONLY + DATASET_ONLY if a("tokens") else DATASET_ONLY if a("text_file") else ())
    given = [flag(k) for k in ignored if a(k) is not None]
    if given:
        source = f"--{prefix}tokens (a token file is used as it is)" if a("tokens") else f"--{prefix}text-file"
        raise SwapKLError(f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect with {source}; "
                          "leave it out")
    d = DataSpec()
    pick = lambda k, default: default if a(k) is None else a(k)  # noqa: E731
    return DataSpec(tokens=a("tokens"), dataset=a("dataset"), dataset_config=a("dataset_config"),
                    split=pick("split", d.split), text_file=a("text_file"), n_seqs=pick("n_seqs", d.n_seqs),
                    seq_len=pick("seq_len", d.seq_len), min_tokens=pick("min_tokens", d.min_tokens),
                    seed=pick("data_seed", d.seed), text_format=pick("text_format", d.text_format),
                    padding=pick("padding", d.padding))


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="local checkpoint directory or hub id")
    p.add_argument("--revision", help="hub revision or subdirectory of a local model, e.g. step1000")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="weight dtype; KL is always float32 or better (default: float32)")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per forward batch (default: 8)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="also load non-safetensors (pickle) weights; recorded in provenance")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run model code from the checkpoint; recorded in provenance")


def add_parser(sub) -> None:
    p = sub.add_parser("probe", help="measure swap/deletion KL for one checkpoint",
                       description="Measure KL(p_base || p_variant) for replacement, interchange, deletion, weight "
                                   "averaging and head-level interchange variants of one checkpoint and write "
                                   "one long-format Parquet file (means and per-sequence sums; `swapkl aggregate` "
                                   "adds the bootstrap confidence intervals).")
    add_model_arguments(p)
    p.add_argument("--protocols", default="replacement,interchange,deletion",
                   help="comma-separated subset of replacement,interchange,deletion,averaging,head_interchange "
                        "(default: replacement,interchange,deletion)")
    p.add_argument("--pairs", default="adjacent", help="adjacent | within:K | all (default: adjacent)")
    p.add_argument("--layers", help="restrict variants to these blocks, e.g. 0,3,5 (default: all blocks)")
    add_data_arguments(p)
    p.add_argument("--chunk-tokens", type=int, default=2048, help="tokens per unembedding chunk (default: 2048)")
    p.add_argument("--progress-file", help="persist progress here so a killed run resumes")
    p.add_argument("--repr-out", metavar="FILE.parquet", help="also write BI / angular-distance rows here")
    p.add_argument("--out", required=True, metavar="FILE.parquet", help="output Parquet file")
    p.set_defaults(func=run)


def run(args) -> None:
    from swapkl.probe import run_probe

    run_probe(args.model, args.out, revision=args.revision, protocols=args.protocols, pairs=args.pairs,
              data=data_spec(args), dtype=args.dtype, device=args.device, batch_size=args.batch_size,
              repr_out=args.repr_out,
              progress_path=args.progress_file, layers=args.layers, allow_pickle=args.allow_pickle,
              trust_remote_code=args.trust_remote_code, chunk_tokens=args.chunk_tokens)
