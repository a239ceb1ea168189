"""Job description of the pruning stage that loads a model: ``swapkl prune`` / rule prune_layers (see
:mod:`swapkl.model.model_job`). ``swapkl aggregate-pruning`` / rule aggregate_pruning only reads tables: its job,
:class:`swapkl.pruning.table.AggregatePruningJob`, lies with its function, without torch."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.windows import DataSpec
from swapkl.model.model_job import ForwardJob
from swapkl.pruning.perplexity import EvalSpec
from swapkl.pruning.prune import run_pruning
from swapkl.pruning.selection import SelectionOptions


@dataclass(frozen=True, kw_only=True)
class PruneJob(ForwardJob):
    """:func:`swapkl.pruning.prune.run_pruning` of one checkpoint (``eval_data``, ``calib_data``, ``probe_data``,
    ``selection``: objects or their dicts)."""

    probe_files: tuple[str, ...]
    repr_file: str | None
    out: str
    eval_data: EvalSpec
    calib_data: DataSpec
    probe_data: DataSpec | None = None
    budgets: tuple[int, ...] = (1, 2, 3, 4, 5)
    spacing: int = 1
    n_random: int = 10
    seed: int = 0
    angular_metric: str = "angular"
    selection: SelectionOptions | None = None
    allow_overlap: bool = False
    agreement_out: str | None = None

    def __post_init__(self):
        self.coerce("eval_data", lambda **spec: EvalSpec.from_dict(spec))
        self.coerce("calib_data", DataSpec)
        self.coerce("probe_data", DataSpec)
        self.coerce("selection", SelectionOptions, none=True)
        self.as_tuple("probe_files", "budgets")

    def run(self):
        return run_pruning(**self.arguments())
