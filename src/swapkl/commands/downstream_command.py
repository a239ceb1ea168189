"""``swapkl downstream``: the paper's downstream tasks on a checkpoint, its pruned models and its healed models."""

from __future__ import annotations

from swapkl.commands.arguments import add_model_arguments, add_placement_arguments, command, placement
from swapkl.commands.paths import input_arg, output_arg
from swapkl.model.model_job import default
from swapkl.relevance.downstream_jobs import DownstreamJob


def add_parser(sub) -> None:
    p = command(sub, "downstream", run)
    add_model_arguments(p, label=True)
    add_placement_arguments(p)
    t = p.add_argument_group("tasks (at least one kind)")
    t.add_argument("--lm-eval-tasks", nargs="*", default=list(default(DownstreamJob, "lm_eval_tasks")),
                   metavar="NAME", help="task names lm-eval loads from the dataset hub, zero-shot multiple choice or "
                                        "loglikelihood (default: the paper's six, %(default)s; give the option "
                                        "without a name for none)")
    input_arg(t, "--lm-eval-include", what="lm-eval task folder", kind="dir", metavar="DIR",
              help="a folder of further lm-eval task YAMLs that --lm-eval-tasks may name; lm-eval renders them "
                   "unsandboxed and imports the Python their !function tags name, so they run code: give only a "
                   "folder you trust")
    input_arg(t, "--tasks", what="task file", nargs="*", default=[], metavar="TASK.yaml",
              help="multiple-choice task files in lm-eval's format (local JSONL)")
    input_arg(t, "--last-word-files", what="last-word file", nargs="*", default=[], metavar="FILE.jsonl",
              help="LAMBADA-style JSONL files (field text), scored as lm-eval's lambada_openai; task = file name")
    t.add_argument("--limit", type=int, default=default(DownstreamJob, "limit"), metavar="N",
                   help="score each task's first N documents (lm-eval's --limit; default: all)")
    m = p.add_argument_group("scored models besides the base")
    input_arg(m, "--pruning", what="pruning table", metavar="FILE.parquet",
              help="this checkpoint's pruning table (swapkl prune): each guide's pruned model at each budget, "
                   "scored on the engine")
    m.add_argument("--pruning-guides", nargs="+", metavar="GUIDE",
                   help="with --pruning: only these guides' pruned models (default: every guide)")
    input_arg(m, "--healed", what="healed checkpoint folder", kind="dir", nargs="*", default=[], metavar="DIR",
              help="healed checkpoints written by swapkl heal or the heal rule (control and healed exports)")
    input_arg(m, "--healed-dir", what="folder of healed checkpoints", kind="dir", metavar="DIR",
              help="a folder of healed checkpoints (the heal rule's results/healed_models/MODEL/REVISION, or "
                   "one holding several `swapkl heal --out` folders): each sub-folder with swapkl_heal.json, the "
                   "control first, after --healed")
    output_arg(p, "--out", required=True, metavar="FILE.parquet", help="output Parquet file")


def run(args) -> None:
    """Score each task on the base model, every pruned model of --pruning (on the probe engine: no pruned model
    is built) and each --healed checkpoint (loaded), and write one row per scored model and task (accuracy,
    acc_norm where lm-eval reports it, perplexity for LAMBADA, score, retention against the base) plus each scored
    model's average over its tasks."""
    from swapkl.relevance.downstream import run_downstream  # torch: imported when the command runs

    run_downstream(job(args))


def job(args) -> DownstreamJob:
    """The downstream job of the command line's options (each option named like a field of the job gives it)."""
    return DownstreamJob(**DownstreamJob.fields_from(vars(args), task_files=args.tasks, placement=placement(args),
                                                     include_path=args.lm_eval_include))
