"""The ``swapkl`` command line. Each subcommand lives in a module of :mod:`swapkl.commands`, named by
:data:`swapkl.commands.COMMANDS` and imported only when its command is run (or the whole parser is built)."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Collection

from swapkl import __version__
from swapkl.commands import COMMANDS
from swapkl.commands.arguments import with_flags
from swapkl.commands.paths import checked, leaf_parser
from swapkl.errors import SwapKLError
from swapkl.joblog import EXIT_BAD_INPUT, LOG_FORMAT, error_line


def chosen(argv: list[str]) -> str | None:
    """The subcommand ``argv`` runs: its first word that is not an option (the top-level options take no value),
    when it names one; None otherwise."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def build_parser(load: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; ``load``: the subcommands whose modules are imported (default: all),
    the others get a parser with only their help line (enough for ``swapkl --help`` and its errors)."""
    parser = argparse.ArgumentParser(
        prog="swapkl",
        description="Protocol-dependent layer redundancy: replacement vs interchange KL probes, "
                    "pruning and the pipeline's helpers.",
    )
    parser.add_argument("--version", action="version", version=f"swapkl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = None if load is None else {COMMANDS[name].module for name in load}
    for name, (module, help) in COMMANDS.items():
        if name in sub.choices:  # added by its module with an earlier command
            continue
        if modules is None or module in modules:
            importlib.import_module(f"swapkl.commands.{module}").add_parser(sub)
        else:
            sub.add_parser(name, help=help)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser([name] if (name := chosen(argv)) else [])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format=LOG_FORMAT)
    try:
        with checked(parser, args):  # every declared input and output, before the command starts
            args.func(args)
    except SwapKLError as e:
        print(error_line(SwapKLError(with_flags(str(e), leaf_parser(parser, args)))), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("swapkl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed our stdout (`swapkl provenance F | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # 128 + SIGPIPE, what a shell reports for a command stopped by a closed pipe
    return 0


if __name__ == "__main__":
    sys.exit(main())
