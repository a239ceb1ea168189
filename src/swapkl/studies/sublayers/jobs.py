"""Job description of the sublayer gap decomposition: rule probe_sublayers (see :mod:`swapkl.model.model_job`);
:func:`swapkl.studies.sublayers.stats.run_sublayers` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob
from swapkl.pruning.eval_spec import EvalSpec


@dataclass(frozen=True, kw_only=True)
class SublayerJob(EngineJob):
    """One checkpoint: block, attention and MLP replacement and interchange of every pair of ``pairs``, and
    attention and MLP deletion of every block, on the windows ``data``; ``out`` the decomposition table;
    ``n_boot`` resamples of the windows (seed ``seed``) for the intervals.

    ``budgets`` (block counts; empty: none): the sublayer and block removal sets of
    :mod:`swapkl.studies.sublayers.stats` at each budget (block guides with spacing ``spacing``), their
    perplexity on ``eval_data`` and their paired differences, written to ``pruning_out``."""

    out: str
    data: DataSpec
    pairs: str = "adjacent"
    n_boot: int = 1000
    seed: int = 0
    budgets: tuple[int, ...] = ()
    spacing: int = 1
    eval_data: EvalSpec | None = None
    pruning_out: str | None = None

    def __post_init__(self):
        self.coerce("data", DataSpec)
        self.coerce("eval_data", lambda **spec: EvalSpec.from_dict(spec))
        self.as_tuple("budgets")
