"""Job description of the downstream benchmarks: ``swapkl downstream`` / rule score_downstream (see
:mod:`swapkl.model.model_job`); torch-free, so the workflow builds it (:mod:`swapkl.config.rule_jobs`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.relevance.relevance_jobs import TaskScoringJob

#: the paper's six tasks by lm-eval name (its downstream table), the default task list
PAPER_TASKS = ("hellaswag", "piqa", "winogrande", "arc_easy", "arc_challenge", "lambada_openai")


@dataclass(frozen=True, kw_only=True)
class DownstreamJob(TaskScoringJob):
    """What :func:`swapkl.relevance.downstream.run_downstream` scores on one checkpoint: the tasks on the base
    model, the pruning table's pruned models (on the probe engine) and the healed checkpoints (loaded), into one
    Parquet file (``out``).

    ``task_files``: multiple-choice task YAMLs (lm-eval's format, local JSONL); ``last_word_files``: LAMBADA-style
    JSONL files (field ``text``), scored as lm-eval's lambada_openai; ``lm_eval_tasks``: task names lm-eval loads
    from the dataset hub (default: the paper's six), ``include_path`` a folder of further lm-eval task YAMLs they
    may name; ``limit``: each task's first N documents (lm-eval's ``--limit``). ``pruning`` and ``pruning_guides``:
    as for relevance. ``healed``: healed checkpoint folders; ``healed_dir``: a folder of them (the heal rule's
    ``results/healed_models/{model}/{revision}``: each sub-folder holding ``swapkl_heal.json``, the control
    first), scored after ``healed``."""

    task_files: tuple[str, ...] = ()
    last_word_files: tuple[str, ...] = ()
    lm_eval_tasks: tuple[str, ...] = PAPER_TASKS
    limit: int | None = None
    healed: tuple[str, ...] = ()
    healed_dir: str | None = None
    include_path: str | None = None

    def __post_init__(self):
        self.as_tuple("task_files", "last_word_files", "lm_eval_tasks", "pruning_guides", "healed")
