"""Job description of the downstream benchmarks: ``swapkl downstream`` / rule score_downstream (see
:mod:`swapkl.model.model_job`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.model.model_job import ModelJob
from swapkl.relevance.downstream import run_downstream
from swapkl.relevance.downstream_tasks import PAPER_TASKS


@dataclass(frozen=True, kw_only=True)
class DownstreamJob(ModelJob):
    """:func:`swapkl.relevance.downstream.run_downstream` of one checkpoint."""

    out: str
    task_files: tuple[str, ...] = ()
    last_word_files: tuple[str, ...] = ()
    lm_eval_tasks: tuple[str, ...] = PAPER_TASKS
    limit: int | None = None
    pruning: str | None = None
    pruning_guides: tuple[str, ...] | None = None
    healed: tuple[str, ...] = ()
    label: str | None = None
    revision_label: str | None = None
    batch_size: int = 8
    chunk_tokens: int = 2048
    placement: dict | None = None
    include_path: str | None = None

    def __post_init__(self):
        self.as_tuple("task_files", "last_word_files", "lm_eval_tasks", "pruning_guides", "healed")

    def run(self) -> list[dict]:
        return run_downstream(**self.arguments())
