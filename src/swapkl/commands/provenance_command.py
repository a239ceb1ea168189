"""``swapkl provenance FILE``: print the provenance stored in a swapkl Parquet file."""

from __future__ import annotations

import json

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg
from swapkl.tables import provenance


def add_parser(sub) -> None:
    p = command(sub, "provenance", run)
    input_arg(p, "file", what="Parquet file", help="a Parquet file written by swapkl")
    p.add_argument("--json", action="store_true", help="print JSON instead of aligned text")
    p.add_argument("--compact", action="store_true",
                   help="aligned text with every list or mapping on one line (default: long ones indented)")


def run(args) -> None:
    """Print the provenance (versions, model, revision, hashes, seed, dtype, device) recorded in a Parquet file
    written by swapkl."""
    prov = provenance.read(args.file)
    print(json.dumps(prov, indent=2, sort_keys=True) if args.json else provenance.format_text(prov, compact=args.compact))
