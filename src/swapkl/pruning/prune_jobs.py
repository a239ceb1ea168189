"""Job description of the pruning stage that loads a model: ``swapkl prune`` / rule prune_layers (see
:mod:`swapkl.model.model_job`). ``swapkl aggregate-pruning`` / rule aggregate_pruning only reads tables: its job,
:class:`swapkl.pruning.table.AggregatePruningJob`, lies with its function, without torch."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import ForwardJob, Job
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.selection_options import SelectionOptions

#: the split of a dataset that the calibration windows (``calib_data``: SLEB, Taylor) default to: the training split,
#: unlike the probe windows' (DataSpec's validation split)
CALIBRATION_SPLIT = "train"

@dataclass(frozen=True, kw_only=True)
class PruneJob(ForwardJob):
    """What :func:`swapkl.pruning.prune.run_pruning` does to one checkpoint: prune it by every guide and baseline
    at every budget and write ``out`` (``eval_data``, ``calib_data``, ``probe_data``, ``selection``: objects or
    their dicts).

    ``compute_dtype`` (e.g. float32 on bfloat16 weights), ``rope_scaling`` and ``logits_dtype`` (bf16 rounding
    of the logits of the perplexity and KL evaluations): see :func:`swapkl.model.loading.load_model`; recorded in
    the provenance.
    ``allow_overlap=True`` lets the probe or calibration windows come from the evaluation text (the
    paper used test text for both); off by default, recorded as ``allow_overlap`` in the provenance.
    ``probe_data`` (the windows for the pruned model's KL) defaults to the ``data_spec`` recorded
    in the probe files' provenance, and its token hash must match theirs. ``seed`` draws the random
    baseline and is recorded for the bootstrap CIs that ``aggregate_pruning`` adds.
    """

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


@dataclass(frozen=True, kw_only=True)
class AggregatePruningJob(Job):
    """What :func:`swapkl.pruning.table.aggregate_pruning` writes: the per-checkpoint pruning files ``inputs`` in
    one table at ``out`` and their agreement files ``agreement_inputs`` in one at ``agreement_out`` (both or
    neither), with bootstrap CIs of ``n_boot`` resamples."""

    inputs: tuple[str, ...]
    out: str
    agreement_inputs: tuple[str, ...] = ()
    agreement_out: str | None = None
    n_boot: int = 1000

    def __post_init__(self):
        self.as_tuple("inputs", "agreement_inputs")
