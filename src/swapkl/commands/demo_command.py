"""``swapkl demo-corpus``, ``demo-tokenizer``, ``demo-train``, ``demo-tasks``: the offline demo's corpus,
tokenizer, models and multiple-choice tasks."""

from __future__ import annotations

from pathlib import Path

from swapkl.commands.arguments import command, default_option
from swapkl.commands.paths import input_arg, output_arg
from swapkl.errors import SwapKLError
from swapkl.demo.architectures import DemoSize
from swapkl.demo.corpus import build_corpus
from swapkl.demo.schedule import parse_steps
from swapkl.demo.task_files import build_demo_tasks
from swapkl.demo.tokenizer import train_demo_tokenizer
from swapkl.demo.train import train_demo_model


def _corpus_and_out(p) -> None:
    input_arg(p, "--corpus", what="demo corpus", kind="dir", required=True, metavar="DIR",
              help="directory written by demo-corpus")
    output_arg(p, "--out", kind="dir", required=True, metavar="DIR", help="output directory")


def add_parser(sub) -> None:
    c = command(sub, "demo-corpus", run_corpus, show_defaults=True)
    output_arg(c, "--out", kind="dir", required=True, metavar="DIR", help="output directory")
    default_option(c, "--seed", build_corpus, "seed of the train/valid/test split")
    default_option(c, "--valid-fraction", build_corpus, "share of paragraphs in valid.txt")
    default_option(c, "--test-fraction", build_corpus, "share of paragraphs in test.txt")

    t = command(sub, "demo-tokenizer", run_tokenizer, show_defaults=True)
    _corpus_and_out(t)
    default_option(t, "--vocab-size", train_demo_tokenizer, "vocabulary size, special tokens included")
    default_option(t, "--min-frequency", train_demo_tokenizer, "minimum count of a merged pair")

    m = command(sub, "demo-train", run_train, show_defaults=True)
    m.add_argument("--arch", required=True, choices=("gpt_neox", "llama", "qwen3"), help="model family")
    _corpus_and_out(m)
    input_arg(m, "--tokenizer", what="demo tokenizer", kind="dir", required=True, metavar="DIR", help="directory written by demo-tokenizer")
    default_option(m, "--steps", train_demo_model, "optimizer updates")
    default_option(m, "--n-even", train_demo_model, "evenly spaced checkpoints after the log-spaced ones")
    m.add_argument("--save-steps", metavar="LIST", default=None,
                   help="explicit comma-separated checkpoint steps (overrides --n-even), e.g. 0,1,4,16,64,300")
    default_option(m, "--seed", train_demo_model, "seed of the initialisation and the data order")
    default_option(m, "--batch-size", train_demo_model, "windows per update")
    default_option(m, "--seq-len", train_demo_model, "tokens per window")
    default_option(m, "--lr", train_demo_model, "peak learning rate (AdamW, warmup + cosine)")
    m.add_argument("--warmup-steps", type=int, default=None, help="linear warmup steps (default: steps/10)")
    default_option(m, "--min-lr-ratio", train_demo_model, "final learning rate / peak")
    default_option(m, "--weight-decay", train_demo_model, "AdamW weight decay of matrices")
    default_option(m, "--eval-windows", train_demo_model, "held-out windows from valid.txt for the loss")
    m.add_argument("--layers", type=int, default=DemoSize.num_layers, help="transformer blocks")
    m.add_argument("--hidden", type=int, default=DemoSize.hidden_size, help="hidden size")
    m.add_argument("--heads", type=int, default=DemoSize.num_heads, help="attention heads")
    m.add_argument("--kv-heads", type=int, default=DemoSize.num_kv_heads, help="key-value heads (llama, qwen3)")
    m.add_argument("--intermediate", type=int, default=DemoSize.intermediate_size,
                   help="MLP width of gpt_neox (llama/qwen3 use 3/4 of it: SwiGLU has three matrices)")
    m.add_argument("--max-positions", type=int, default=DemoSize.max_position_embeddings, help="max_position_embeddings")
    m.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all cores)")

    k = command(sub, "demo-tasks", run_tasks)
    _corpus_and_out(k)
    k.add_argument("--n-docs", type=int, default=200, help="documents per task (default: 200)")
    k.add_argument("--seed", type=int, default=0, help="seed of the documents' choice (default: 0)")


def run_corpus(args) -> None:
    """Collect the docstrings of Python's standard library (source files are parsed, not run) and the
    language-reference topics, keep prose paragraphs, deduplicate them and split them by a seeded hash into
    disjoint train.txt, valid.txt (probe/calibration text) and test.txt (perplexity text), plus corpus.json with
    the Python version and each file's sha256. The same Python version gives the same bytes."""
    manifest = build_corpus(args.out, seed=args.seed, valid_fraction=args.valid_fraction,
                            test_fraction=args.test_fraction)
    files = manifest["files"]
    print(f"demo corpus in {args.out} (Python {manifest['python_version']}): "
          + ", ".join(f"{k} {v['paragraphs']} paragraphs / {v['bytes']} bytes" for k, v in files.items()))


def run_tokenizer(args) -> None:
    """Train a byte-level BPE (eos <|endoftext|>, pad <|padding|>) on DIR/train.txt and save it so
    transformers.AutoTokenizer.from_pretrained(OUT) loads it. Deterministic."""
    if args.vocab_size < 1:
        raise SwapKLError(f"--vocab-size {args.vocab_size} must be positive")
    train_demo_tokenizer(args.corpus, args.out, vocab_size=args.vocab_size, min_frequency=args.min_frequency)
    print(f"demo tokenizer ({args.vocab_size} tokens) in {args.out}")


def run_train(args) -> None:
    """Train a tiny gpt_neox (Pythia-like), llama or qwen3 model on the demo corpus and save Hugging Face
    checkpoints OUT/step{N}/ (safetensors + tokenizer) on a Pythia-like schedule: step0 (the initialisation),
    powers of two, then N_EVEN evenly spaced steps. Also writes OUT/training_log.csv (held-out and train loss
    per saved step) and OUT/demo_model.json. Seeded: the same machine gives byte-identical weights."""
    if args.threads is not None and args.threads < 1:
        raise SwapKLError(f"--threads {args.threads} must be positive")
    size = DemoSize(num_layers=args.layers, hidden_size=args.hidden, num_heads=args.heads,
                    num_kv_heads=args.kv_heads, intermediate_size=args.intermediate,
                    max_position_embeddings=args.max_positions)
    summary = train_demo_model(
        args.arch, args.corpus, args.tokenizer, args.out,
        steps=args.steps, save_steps=parse_steps(args.save_steps) if args.save_steps else None,
        n_even=args.n_even, seed=args.seed, size=size, batch_size=args.batch_size, seq_len=args.seq_len,
        lr=args.lr, warmup_steps=args.warmup_steps, min_lr_ratio=args.min_lr_ratio,
        weight_decay=args.weight_decay, eval_windows=args.eval_windows, threads=args.threads)
    print(f"{args.arch}: {summary['n_parameters']} parameters, {len(summary['save_steps'])} checkpoints in "
          f"{args.out}; held-out loss {summary['initial_heldout_loss']:.3f} -> "
          f"{summary['final_heldout_loss']:.3f} in {summary['train_seconds']:.1f} s")


def run_tasks(args) -> None:
    """Write demo_next_word (4 choices) and demo_continuation (2 choices) from the corpus's held-out test.txt
    as JSONL + lm-eval task YAML."""
    for path in build_demo_tasks(Path(args.corpus), Path(args.out), n_docs=args.n_docs, seed=args.seed):
        print(path)
