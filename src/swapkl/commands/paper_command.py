"""``swapkl fetch-paper-inputs``: the published study's prompt lists as JSON Lines."""

from __future__ import annotations

from swapkl.commands.arguments import command
from swapkl.commands.paths import input_arg, output_arg
from swapkl.paper.prompt_lists import PAPER_COMMIT, PAPER_REPO, PROMPT_LISTS, fetch_paper_inputs, output_paths


def add_parser(sub) -> None:
    p = command(sub, "fetch-paper-inputs", run)
    output_arg(p, "--out-dir", what="output folder", kind="dir", required=True, metavar="DIR", help="writes DIR/NAME.jsonl for each list")
    p.add_argument("--lists", nargs="+", metavar="NAME", choices=[x.name for x in PROMPT_LISTS],
                   help=f"which lists (default: all of {', '.join(x.name for x in PROMPT_LISTS)})")
    input_arg(p, "--repo", what="local clone of the paper's code", kind="dir", metavar="PATH",
                   help=f"a local clone of github.com/{PAPER_REPO} at commit {PAPER_COMMIT[:12]} (default: download "
                        "the files from raw.githubusercontent.com)")
    p.add_argument("--timeout", type=float, default=60.0, help="download timeout in seconds (default: 60)")


def run(args) -> None:
    """Get the scripts of the paper's public code that hold its probe prompts (at the pinned commit, from raw
    GitHub URLs or a local clone), check their sha256, extract the prompt lists with `ast` (nothing is
    executed) and write each as JSON Lines, one JSON string per line: llama_prompts_100 (all 100 prompts of
    the Llama-3.1-8B distances), pythia_prompts_32 (the first 32 prompts of the Pythia trajectory),
    gpt2_merge_prompts_50 (GPT-2-Medium's merge test: the first 50 of its seed prompts cycled with its
    suffixes), gpt2_pair_prompts_200 (the first 200 of the same cycle: GPT-2-Medium's pair distances, which
    its LaCo ordered pairs by) and gpt2_head_prompts_20 (the 20 prompts of GPT-2-Medium's head-level swaps)."""
    fetch_paper_inputs(output_paths(args.out_dir, args.lists), args.repo, timeout=args.timeout)
