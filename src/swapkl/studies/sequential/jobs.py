"""Job description of the sequential probe: ``swapkl probe-sequential`` / rule probe_sequential (see
:mod:`swapkl.model.model_job`); :func:`swapkl.studies.sequential.probe.run_sequential_probe` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob
from swapkl.stats.sequential_design import Decisions, Design


#: the config keys of a model's `sequential` section that make the job's design and its decisions
SEQUENTIAL_DESIGN = ("first", "batch", "cap", "confidence")
SEQUENTIAL_DECISIONS = ("signs", "halfwidth", "sets", "budgets", "spacing", "stability", "n_boot", "seed")


@dataclass(frozen=True, kw_only=True)
class SequentialJob(EngineJob):
    """One checkpoint probed sequentially on the pool of windows ``data`` (its ``n_seqs`` windows), over the
    pairs ``pairs``, with the looks of ``design`` and for the ``decisions``; ``out`` is the probe table,
    ``decisions_out`` the decisions table, ``progress_path`` the resume file (``design`` and ``decisions``:
    the objects or their dicts)."""

    out: str
    decisions_out: str
    data: DataSpec
    pairs: str = "adjacent"
    design: Design = Design()
    decisions: Decisions = Decisions()
    progress_path: str | None = None

    def __post_init__(self):
        self.coerce("data", DataSpec)
        self.coerce("design", Design)
        if isinstance(self.decisions, dict):
            given = dict(self.decisions)
            for name in ("sets", "budgets"):
                if isinstance(given.get(name), list):
                    given[name] = tuple(given[name])
            object.__setattr__(self, "decisions", Decisions(**given))
