"""Job description of the pruning stage that loads a model: ``swapkl prune`` / rule prune_layers (see
:mod:`swapkl.model.model_job`). ``swapkl aggregate-pruning`` / rule aggregate_pruning only reads tables: its job,
:class:`swapkl.pruning.table.AggregatePruningJob`, lies with its function, without torch."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import ForwardJob
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.selection_options import SelectionOptions


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
