"""``swapkl figures KIND``: draw one figure (PNG + PDF) of the report, one KIND per entry of the figure registry
(:mod:`swapkl.figures.figure_registry`): its input tables, wildcards (--model, --revision, --family) and plot options
come from the entry.
"""

from __future__ import annotations

import argparse

import swapkl.studies  # noqa: F401  (the study folders register the figures they hold)
from swapkl.commands import COMMANDS
from swapkl.commands.paths import CHECK, SETS_PATHS, input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.figures.figure_registry import Figure, figures


def parse_logs(items: list[str]) -> dict[str, str]:
    """``["demo-small=logs/a.csv", ...]`` -> ``{"demo-small": "logs/a.csv"}`` (order kept)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise SwapKLError(f"--log {item!r}: expected NAME=CSV, e.g. demo-small=results/demo/small/training.csv")
        if name.strip() in out:
            raise SwapKLError(f"--log: name {name.strip()!r} given twice")
        out[name.strip()] = path.strip()
    return out


def parse_families(items: list[str]) -> dict:
    """``["fam=a:0,b:1"]`` -> ``{"fam": {"members": {"a": 0, "b": 1}}}``: seed families for the covariate figure."""
    out: dict = {}
    for item in items:
        name, sep, members = item.partition("=")
        pairs = [m.partition(":") for m in members.split(",") if m.strip()]
        if not sep or not name.strip() or not pairs or any(not s or not seed.strip().isdigit() for _, s, seed in pairs):
            raise SwapKLError(f"--family {item!r}: expected NAME=MODEL:SEED,MODEL:SEED, e.g. fam=tiny-s0:0,tiny-s1:1")
        out[name.strip()] = {"members": {m.strip(): int(seed) for m, _, seed in pairs}}
    return out


class _FigureStem(argparse.Action):
    """``--out X``: the figure at ``X.png`` and ``X.pdf`` (a ``.png`` or ``.pdf`` ending of X is dropped)."""

    def __call__(self, parser, namespace, value, option_string=None):
        stem = value[:-4] if value.lower().endswith((".png", ".pdf")) else value
        namespace.figure_out = value
        namespace.out_png, namespace.out_pdf = f"{stem}.png", f"{stem}.pdf"


class _FigureFile(argparse._StoreAction):
    """``--out-png`` / ``--out-pdf``: one format's file, remembered as given (not derived from ``--out``)."""

    def __call__(self, parser, namespace, value, option_string=None):
        namespace.figure_files_given = True
        setattr(namespace, self.dest, value)


def _check_figure_outputs(args) -> None:
    """``--out`` alone, or both ``--out-png`` and ``--out-pdf``."""
    given = getattr(args, "figure_out", None)
    if given is not None and getattr(args, "figure_files_given", False):
        raise SwapKLError("give --out FILE (the PNG and the PDF beside it) or --out-png and --out-pdf, not both")
    if args.out_png is None or args.out_pdf is None:
        raise SwapKLError("give --out FILE (writes FILE.png and FILE.pdf), or both --out-png and --out-pdf")


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--out`` (the PNG and the PDF beside it), or ``--out-png`` and ``--out-pdf``: the output flags of every
    drawing command (``--png``/``--pdf``: deprecated aliases)."""
    g = p.add_argument_group("output (--out, or --out-png and --out-pdf)")
    stem = g.add_argument("--out", action=_FigureStem, metavar="FILE",
                          help="the figure as FILE.png and FILE.pdf (a .png or .pdf ending is dropped)")
    setattr(stem, SETS_PATHS, ("out_png", "out_pdf"))  # checked as those two outputs
    png = output_arg(g, "--out-png", "--png", what="figure", dest="out_png", action=_FigureFile, metavar="FILE.png",
                     help="output PNG (--png: deprecated alias)")
    output_arg(g, "--out-pdf", "--pdf", what="figure", dest="out_pdf", action=_FigureFile, metavar="FILE.pdf",
               help="output PDF (--pdf: deprecated alias)")
    setattr(png, CHECK, _check_figure_outputs)


#: the options of the values a plot function reads (Figure.plot_params): flag and argparse keywords, and how the
#: parsed value becomes the value the plot function gets
PLOT_PARAMS = {
    "n_boot": ("--n-boot", {"type": int, "default": 1000, "help": "bootstrap resamples (default: 1000)"}, None),
    "seed": ("--seed", {"type": int, "default": 0, "help": "bootstrap seed (default: 0)"}, None),
    "guide": ("--guide", {"default": "bi", "help": "the guide whose ranks are set against the deletion ranking "
                                                   "(default: bi)"}, None),
    "families": ("--family", {"action": "append", "default": [], "metavar": "NAME=MODEL:SEED,...",
                              "help": "a seed family whose members' pairs are pooled in one panel; repeat for each "
                                      "family"}, parse_families),
    "training_logs": ("--log", {"action": "append", "required": True, "metavar": "NAME=CSV",
                                "help": "a model's training log (CSV: step, heldout_loss, train_loss); repeat for "
                                        "each model"}, parse_logs),
}
WILDCARD_HELP = {"model": "model label as in the table's model column",
                 "revision": "checkpoint revision label, e.g. step143000",
                 "family": "seed family name as in the table's family column"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _kind(kinds, fig: Figure) -> None:
    p = kinds.add_parser(fig.kind, help=fig.help,
                         description=f"{fig.help[0].upper()}{fig.help[1:]}. Writes a PNG and a PDF, byte-identical on "
                                     "reruns.")
    for name, pattern in fig.inputs.items():
        if name not in fig.expand:
            input_arg(p, _flag(name), what=f"{name} table", required=True, metavar="FILE",
                      help=f"the {name} table ({pattern} in the workflow)")
    for wildcard in fig.wildcards:
        p.add_argument(_flag(wildcard), required=True, help=WILDCARD_HELP[wildcard])
    for name in fig.plot_params:
        flag, kwargs, _ = PLOT_PARAMS[name]
        if name == "training_logs":
            input_arg(p, flag, what="training log", named=True, dest=name, **kwargs)
        else:
            p.add_argument(flag, dest=name, **kwargs)
    add_output_arguments(p)
    p.set_defaults(func=_draw, figure_entry=fig)


def add_parser(sub) -> None:
    p = sub.add_parser("figures", help=COMMANDS["figures"].help,
                       description="Draw one figure of the report (any registered figure) from its results "
                                   "table(s). Each writes a PNG and a PDF, byte-identical on reruns.")
    kinds = p.add_subparsers(dest="figure", required=True, metavar="FIGURE")
    for fig in figures().values():
        _kind(kinds, fig)


def _draw(args) -> None:
    fig: Figure = args.figure_entry
    draw_figure(fig.name, {name: getattr(args, name) for name in fig.inputs if name not in fig.expand}, args.out_png,
                args.out_pdf, {w: getattr(args, w) for w in fig.wildcards},
                {name: getattr(args, name) for name in fig.plot_params})


def draw_figure(kind: str, inputs: dict, out_png: str, out_pdf: str, wildcards: dict, given: dict) -> None:
    """Draw registered figure ``kind`` as ``swapkl figures KIND`` does: ``given`` holds the parsed values of its
    plot options (one left out takes its default)."""
    fig = figures()[kind]
    params = {}
    for name in fig.plot_params:
        flag, kwargs, parse = PLOT_PARAMS[name]
        value = given.get(name, kwargs.get("default"))
        params[name] = parse(value) if parse else value
    fig.draw(inputs, out_png, out_pdf, wildcards=wildcards, params=params)
