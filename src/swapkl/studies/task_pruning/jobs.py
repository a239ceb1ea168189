"""Job description of the task-calibrated pruning of one checkpoint: rule prune_on_tasks (see
:mod:`swapkl.model.model_job`); :func:`swapkl.studies.task_pruning.run.run_task_pruning` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.model.model_job import EngineJob
from swapkl.relevance.relevance_jobs import TASK_PRUNING_METHODS


@dataclass(frozen=True, kw_only=True)
class TaskPruningJob(EngineJob):
    """Choose each of ``methods``' blocks on each calibration set of ``calibrations`` (dicts: ``{name, tasks,
    fraction, max_docs}``, ``{name, lm}`` or a curve task's ``{name, tasks: [name], curve: true}``), the
    ``curve_methods`` also at the ``curve_budgets`` on single-task calibrations, and evaluate every pruned model on
    every task of ``tasks`` (lm-eval names; ``curve_tasks`` only on their own curve calibration's models), into
    ``out``. ``include_path``: a folder of task YAML files (the demo's split tasks); ``include_defaults``: lm-eval's
    own tasks too; ``metadata``: the rows' labels (``model``, ``revision``)."""

    out: str
    calibrations: tuple[dict, ...]
    tasks: tuple[str, ...]
    curve_tasks: tuple[str, ...] = ()
    methods: tuple[str, ...] = TASK_PRUNING_METHODS
    prune_fraction: float = 0.25
    curve_methods: tuple[str, ...] = ("bi", "accuracy")
    curve_budgets: tuple[int, ...] = ()
    spacing: int = 1
    score_pairs: str = "adjacent"
    seq_len: int = 256
    seed: int = 0
    include_path: str | None = None
    include_defaults: bool = True

    def __post_init__(self):
        self.as_tuple("calibrations", "tasks", "curve_tasks", "methods", "curve_methods", "curve_budgets")
