"""``swapkl export``: a pruned or reordered checkpoint in the Hugging Face layout, verified on reload."""

from __future__ import annotations

import json

from swapkl.commands.arguments import add_model_arguments, command
from swapkl.commands.paths import output_arg
from swapkl.export import export_checkpoint, parse_indices, parse_sublayers


def add_parser(sub) -> None:
    p = command(sub, "export", run)
    add_model_arguments(p, engine=False, dtype_help="dtype of the written weights (default: float32)",
                        device_help="device of the verification: cpu, cuda, cuda:N or auto")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--remove", metavar="I,J", help="blocks to remove, e.g. 3,5")
    what.add_argument("--order", metavar="I,J,...", help="blocks to run, slot by slot, e.g. 0,2,1,3")
    p.add_argument("--merge", metavar="A,B", help="with --remove: slots A whose block becomes the weight average of "
                   "blocks A and A+1 (block A+1 removed), e.g. a LaCo row of the pruning table")
    p.add_argument("--skip", metavar="I.PART,...", help="sublayers of kept blocks that add nothing, e.g. "
                   "3.attention,5.mlp (a row of results/sublayer_pruning.parquet): their output projections are "
                   "written as zeros")
    p.add_argument("--guide", help="name of the guide that chose the blocks (recorded in the provenance)")
    output_arg(p, "--out", kind="dir", required=True, metavar="DIR", help="new output directory")


def run(args) -> None:
    """Write the model that runs the given blocks (safetensors, num_hidden_layers and per-layer fields
    renumbered, tokenizer copied), reload it with AutoModelForCausalLM, check its logits against the engine's
    variant and KV-cache generation, and record the provenance in swapkl_export.json. --out must not exist."""
    remove = None if args.remove is None else parse_indices(args.remove, "--remove")
    order = None if args.order is None else parse_indices(args.order, "--order")
    merge = None if args.merge is None else parse_indices(args.merge, "--merge")
    skip = None if args.skip is None else parse_sublayers(args.skip, "--skip")
    prov = export_checkpoint(args.model, args.out, revision=args.revision, remove=remove, order=order, merge=merge,
                             skip=skip, guide=args.guide, dtype=args.dtype, device=args.device, allow_pickle=args.allow_pickle,
                             trust_remote_code=args.trust_remote_code)
    print(json.dumps({"out": args.out, "order": prov["order"], "removed_layers": prov["removed_layers"],
                      "skipped_sublayers": prov["skipped_sublayers"],
                      **prov["verification"]}))
