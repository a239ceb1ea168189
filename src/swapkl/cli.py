"""The ``swapkl`` command line. Each subcommand lives in :mod:`swapkl.commands`."""

from __future__ import annotations

import argparse
import logging
import sys

from swapkl import __version__
from swapkl.commands import (
    aggregate_command, construct_command, demo_command, downstream_command, export_command, figures_command,
    heal_command,
    healed_probe_command, paper_command, probe_command, provenance_command, prune_command, relevance_command,
    scorecard_command, search_command, spans_command,
)
from swapkl.commands.arguments import with_flags
from swapkl.commands.paths import checked, leaf_parser
from swapkl.errors import SwapKLError
from swapkl.joblog import EXIT_BAD_INPUT, LOG_FORMAT, error_line

COMMANDS = (probe_command, prune_command, export_command, heal_command, healed_probe_command, relevance_command,
            aggregate_command, figures_command, provenance_command, demo_command, paper_command, scorecard_command,
            spans_command, search_command, construct_command, downstream_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swapkl",
        description="Protocol-dependent layer redundancy: replacement vs interchange KL probes, "
                    "pruning and the pipeline's helpers.",
    )
    parser.add_argument("--version", action="version", version=f"swapkl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
