"""``swapkl heal``: a short fine-tune of a (pruned) checkpoint, merged, saved and verified on reload."""

from __future__ import annotations

import json
import os

from swapkl.commands.arguments import add_model_arguments, add_text_source_arguments, command
from swapkl.commands.paths import output_arg
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.model.model_job import default
from swapkl.recovery.heal_settings import TrainText, settings_from
from swapkl.recovery.recovery_table import heal_loaded


def add_heal_arguments(p) -> None:
    """The heal settings: a named preset and the fields that override it."""
    g = p.add_argument_group("heal settings (a preset; each option below overrides its field)")
    g.add_argument("--preset", default=default(settings_from, "preset"), help="named settings: paper (LoRA r16/alpha32 on Q/K/V/O, 200 AdamW "
                   "steps, lr 2e-4, weight decay 0.01, batch 1, 128 tokens) or demo (default: paper)")
    g.add_argument("--method", choices=["lora", "last_k"], help="LoRA adapters, or the last k blocks and the LM head "
                   "in full (the Navigation-LLM baseline)")
    g.add_argument("--targets", help="LoRA target modules: aliases q,k,v,o or module names, comma-separated")
    g.add_argument("--rank", type=int, help="LoRA rank")
    g.add_argument("--alpha", type=float, help="LoRA alpha (scaling alpha / rank)")
    g.add_argument("--last-k", type=int, help="with --method last_k: how many of the last blocks train")
    g.add_argument("--steps", type=int, help="optimizer steps")
    g.add_argument("--lr", type=float, help="AdamW learning rate")
    g.add_argument("--weight-decay", type=float, help="AdamW weight decay")
    g.add_argument("--train-batch-size", type=int, help="chunks per step")
    g.add_argument("--train-seq-len", type=int, help="tokens per training chunk")
    g.add_argument("--heal-seed", type=int, help="seed of the adapters' initialisation and the chunk draws")
    t = p.add_argument_group("training text (exactly one of --train-text-file, --train-dataset)")
    add_text_source_arguments(t, "train-", what="training text file", split=TrainText.split)
    t.add_argument("--train-max-words", type=int, default=TrainText.max_words, metavar="N",
                   help="train on the text's first N words only (default: the whole text)")


def heal_settings(args, **fixed):
    targets = None if args.targets is None else tuple(args.targets.split(","))
    return settings_from(args.preset, method=args.method, targets=targets, rank=args.rank, alpha=args.alpha,
                         last_k=args.last_k, steps=args.steps, lr=args.lr, weight_decay=args.weight_decay,
                         batch_size=args.train_batch_size, seq_len=args.train_seq_len, seed=args.heal_seed, **fixed)


def train_text(args):
    return TrainText(text_file=args.train_text_file, dataset=args.train_dataset,
                     dataset_config=args.train_dataset_config, split=args.train_split,
                     text_fields=args.train_text_fields, max_words=args.train_max_words)


def add_parser(sub) -> None:
    p = command(sub, "heal", run)
    add_model_arguments(p, engine=False, device_help="cpu, cuda, cuda:N or auto (default)")
    add_heal_arguments(p)
    output_arg(p, "--out", what="healed checkpoint folder", kind="dir", required=True, metavar="DIR",
               help="new output directory of the healed checkpoint")


def run(args) -> None:
    """Train on the training text with next-token cross-entropy (the settings of --preset, each overridable),
    fold the adapters into the weights, write the checkpoint to --out (which must not exist) with
    swapkl_heal.json (source, settings, text, per-step losses), reload it with AutoModelForCausalLM and check
    its logits against the trained model in memory. Nothing is left behind on failure."""
    settings = heal_settings(args)
    text = train_text(args)
    text.eval_spec().check()
    if os.path.lexists(args.out):
        raise SwapKLError(f"--out {args.out!r} already exists; swapkl heal writes only a new directory")
    loaded = load_model(args.model, args.revision, dtype=args.dtype, device=args.device,
                        allow_pickle=args.allow_pickle, trust_remote_code=args.trust_remote_code)
    _, losses = heal_loaded(loaded, args.out, settings, text)
    print(json.dumps({"out": args.out, "steps": settings.steps, "first_loss": losses[0] if losses else None,
                      "last_loss": losses[-1] if losses else None}))
