"""Job description of the exact removal-set search: ``swapkl optimal-search`` / rule search_removal_sets (see
:mod:`swapkl.model.model_job`); :func:`swapkl.studies.optimal_search.run.run_optimal_search` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob


@dataclass(frozen=True, kw_only=True)
class SearchJob(EngineJob):
    """Remove each of ``budgets`` blocks of one checkpoint four ways (greedy, width-``beam_width`` beam,
    best-first, and exhaustive enumeration where C(L, n) is at most ``max_evals``), every removal set scored by
    the NLL of the pruned model on the windows ``calibration`` (a DataSpec or its dict); the table goes to
    ``out``, its rows labelled by ``metadata`` (``model``, ``revision``; default: the loaded model's)."""

    out: str
    calibration: DataSpec
    budgets: tuple[int, ...] = (1, 2, 3)
    beam_width: int = 3
    max_evals: int = 5000

    def __post_init__(self):
        self.coerce("calibration", DataSpec)
        self.as_tuple("budgets")
