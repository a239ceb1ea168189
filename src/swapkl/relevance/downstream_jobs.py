"""Job description of the downstream benchmarks: ``swapkl downstream`` / rule score_downstream (see
:mod:`swapkl.model.model_job`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.relevance.downstream import run_downstream
from swapkl.relevance.downstream_tasks import PAPER_TASKS
from swapkl.relevance.relevance_jobs import TaskScoringJob


@dataclass(frozen=True, kw_only=True)
class DownstreamJob(TaskScoringJob):
    """:func:`swapkl.relevance.downstream.run_downstream` of one checkpoint."""

    task_files: tuple[str, ...] = ()
    last_word_files: tuple[str, ...] = ()
    lm_eval_tasks: tuple[str, ...] = PAPER_TASKS
    limit: int | None = None
    healed: tuple[str, ...] = ()
    include_path: str | None = None

    def __post_init__(self):
        self.as_tuple("task_files", "last_word_files", "lm_eval_tasks", "pruning_guides", "healed")

    def run(self) -> list[dict]:
        return run_downstream(**self.arguments())
