"""What the subcommands share: how one is declared, the model and engine options, the data options.

A subcommand's ``--help`` description is the docstring of the function that runs it (:func:`command`),
so the text that says what a command does sits on the code that does it.
"""

from __future__ import annotations

import argparse
import inspect

from swapkl.data import DataSpec
from swapkl.errors import SwapKLError


def command(sub, name: str, func, help: str, *, show_defaults: bool = False) -> argparse.ArgumentParser:
    """The subcommand ``name`` that runs ``func(args)``; its description is ``func``'s docstring.

    ``show_defaults`` appends every option's default to its help (otherwise the help says it where it matters).
    """
    fmt = argparse.ArgumentDefaultsHelpFormatter if show_defaults else argparse.HelpFormatter
    p = sub.add_parser(name, help=help, description=inspect.getdoc(func), formatter_class=fmt)
    p.set_defaults(func=func)
    return p


def add_model_arguments(p: argparse.ArgumentParser, *, engine: bool = True,
                        dtype_help: str = "weight dtype; KL is always float32 or better (default: float32)",
                        device_help: str = "cpu, cuda, cuda:N or auto (default)") -> None:
    """The checkpoint, how it is loaded and (``engine``) how the probe engine batches it."""
    p.add_argument("--model", required=True, help="local checkpoint directory or hub id")
    p.add_argument("--revision", help="hub revision or subdirectory of a local model, e.g. step1000")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help=dtype_help)
    p.add_argument("--device", default="auto", help=device_help)
    if engine:
        p.add_argument("--batch-size", type=int, default=8, help="sequences per forward batch (default: 8)")
        p.add_argument("--chunk-tokens", type=int, default=2048, help="tokens per unembedding chunk (default: 2048)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="also load non-safetensors (pickle) weights; recorded in provenance")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run model code from the checkpoint; recorded in provenance")


def add_placement_arguments(p: argparse.ArgumentParser) -> None:
    """Options that spread a model larger than one GPU over the node's GPUs, CPU memory and disk (accelerate)."""
    g = p.add_argument_group("models larger than one device (accelerate; --device stays auto)")
    g.add_argument("--device-map", choices=["auto", "balanced", "balanced_low_0", "sequential"],
                   help="place the blocks across the GPUs of this node, then CPU memory, then disk")
    g.add_argument("--max-memory", metavar="DEV=SIZE,...", type=_max_memory,
                   help="memory cap per device with --device-map, e.g. 0=70GiB,1=70GiB,cpu=200GiB")
    g.add_argument("--offload-folder", metavar="DIR", help="folder for disk-offloaded weights with --device-map")


def _max_memory(text: str) -> dict:
    out = {}
    for item in text.split(","):
        dev, sep, size = item.partition("=")
        if not sep or not dev.strip() or not size.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not DEVICE=SIZE (e.g. 0=70GiB or cpu=200GiB)")
        out[dev.strip()] = size.strip()
    return out


def placement(args) -> dict:
    """The keyword arguments of :func:`swapkl.loading.load_model` that the placement options give."""
    keys = ("device_map", "max_memory", "offload_folder")
    return {k: getattr(args, k) for k in keys if getattr(args, k) is not None}


# Options that only shape windows cut from text; a token file is used as it is. Their defaults are
# DataSpec's, filled in by data_spec() so that an option given where it has no effect can be refused.
TEXT_ONLY = ("n_seqs", "seq_len", "min_tokens", "data_seed", "text_format", "padding")
DATASET_ONLY = ("dataset_config", "split", "text_fields")


def add_data_arguments(p: argparse.ArgumentParser, prefix: str = "") -> None:
    d = DataSpec()
    g = p.add_argument_group("data (exactly one of --tokens, --dataset, --text-file)")
    g.add_argument(f"--{prefix}tokens", metavar="FILE.npy", help="int array [n_seqs, seq_len]; every position valid")
    g.add_argument(f"--{prefix}dataset", metavar="NAME", help="a `datasets` dataset, e.g. wikitext")
    g.add_argument(f"--{prefix}dataset-config", metavar="CONFIG", help="dataset configuration, e.g. wikitext-2-raw-v1")
    g.add_argument(f"--{prefix}split", help=f"dataset split (default: {d.split})")
    g.add_argument(f"--{prefix}text-file", metavar="FILE", help="local UTF-8 text, paragraphs separated by blank lines")
    add_text_fields_argument(g, prefix)
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


def add_text_fields_argument(group, prefix: str) -> None:
    group.add_argument(f"--{prefix}text-fields", metavar="FIELD,FIELD", type=lambda t: [f.strip() for f in t.split(",")],
                       help="dataset fields that make a row's text, joined by a blank line (list fields item by "
                            "item; default: the `text` column), e.g. instruction,input,output")


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
                    padding=pick("padding", d.padding), text_fields=a("text_fields"))
