"""``swapkl construct``: the snowball model of Theorem 1 for a multiple-choice task, as a checkpoint."""

from __future__ import annotations

import json

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.relevance.construct import construct


def add_parser(sub) -> None:
    p = command(sub, "construct", run_construct)
    input_arg(p, "--task", what="task file", required=True, metavar="TASK.yaml",
              help="multiple-choice task in lm-eval's format whose choices are single words (e.g. demo_next_word)")
    p.add_argument("--eps", type=float, default=0.01, help="BI of the critical block, in (0, 0.2] (default: 0.01)")
    p.add_argument("--max-docs", type=int, default=None, metavar="N",
                   help="build on the task's first N documents only (default: all; the build's time grows with them)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random token embeddings (default: 0)")
    output_arg(p, "--out", what="checkpoint folder", kind="dir", required=True, metavar="DIR",
               help="new (or earlier `swapkl construct`) folder for the checkpoint")


def run_construct(args) -> None:
    """Hand-set a 7-block LLaMA that answers every document of the task, whose block 2 has block influence
    (1 - cosine of its input and output) exactly --eps, the lowest of all blocks, yet whose accuracy drops
    from 100% to 0 without it: a tiny update that later blocks amplify, and large updates in dimensions the
    prediction ignores. The folder holds the safetensors weights, a word-level tokenizer and snowball.json
    (the measured BI of every block and both accuracies)."""
    manifest = construct(args.task, args.eps, args.out, seed=args.seed, max_docs=args.max_docs)
    print(json.dumps({k: manifest[k] for k in ("eps", "critical_block", "bi", "accuracy",
                                               "accuracy_without_critical")}))
