"""Job description of accuracy relevance: ``swapkl relevance`` / rule score_relevance (see
:mod:`swapkl.model.model_job`); torch-free, so the workflow builds it (:mod:`swapkl.config.rule_jobs`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.layout import DEMO_DIR
from swapkl.model.model_job import ModelJob

#: the demo's next-word and continuation tasks (swapkl.demo.task_files writes them), which a section's
#: `demo_tasks: true` scores (relevance, downstream benchmarks, task-calibrated pruning) under these names
DEMO_TASKS = ("demo_next_word", "demo_continuation")


def section_task_files(section: dict) -> list[str]:
    """The multiple-choice task files a config section scores (relevance, downstream): its `tasks`, then the
    demo's where its `demo_tasks` asks (the healing stage scores its healed models on the relevance section's)."""
    return list(section["tasks"]) + ([f"{DEMO_DIR}/tasks/{task}.yaml" for task in DEMO_TASKS]
                                     if section["demo_tasks"] else [])


#: the methods of the task-calibrated pruning (swapkl.studies.task_pruning), in the order its tables list them
TASK_PRUNING_METHODS = ("original", "taylor", "bi", "sleb_iterative", "accuracy", "interchange", "deletion")


@dataclass(frozen=True, kw_only=True)
class TaskScoringJob(ModelJob):
    """What the jobs that score a checkpoint's tasks share (relevance here, the downstream benchmarks in
    :mod:`swapkl.relevance.downstream_jobs`): the output table, the row labels, the engine's batching and
    placement, and the pruning table whose guides' removals are scored too."""

    out: str
    label: str | None = None
    revision_label: str | None = None
    batch_size: int = 8
    chunk_tokens: int = 2048
    placement: dict | None = None
    pruning: str | None = None
    pruning_guides: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class RelevanceJob(TaskScoringJob):
    """What :func:`swapkl.relevance.accrel.run_relevance` scores on one checkpoint: the relevance of every block
    on each task, into one Parquet file (``out``).

    ``task_files``: multiple-choice task YAMLs (lm-eval's format, local JSONL); ``harness_tasks``: task names
    lm-eval loads (:mod:`swapkl.relevance.harness_tasks`, hub datasets); ``lm_data``: language-modelling windows
    scored under ``lm_name``, and ``lm_sets`` further ones by task name (``{name: DataSpec}``; DataSpecs or their
    dicts). ``pruning``: this checkpoint's pruning table, whose guides' pruned models are scored too (only those of
    ``pruning_guides`` when given). ``label`` and ``revision_label`` name the rows (default: the checkpoint's
    own)."""

    task_files: tuple[str, ...]
    lm_data: DataSpec | None = None
    lm_name: str = "lm"
    lm_sets: dict | None = None
    harness_tasks: tuple[str, ...] = ()

    def __post_init__(self):
        self.coerce("lm_data", DataSpec)
        if self.lm_sets is not None:
            object.__setattr__(self, "lm_sets", {name: DataSpec(**spec) if isinstance(spec, dict) else spec
                                                 for name, spec in self.lm_sets.items()})
        self.as_tuple("task_files", "harness_tasks", "pruning_guides")
