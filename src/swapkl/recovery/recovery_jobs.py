"""Job description of the recovery after pruning, rule heal_pruned_models (see :mod:`swapkl.model.model_job`);
torch-free, so the workflow builds it (:mod:`swapkl.config.rule_jobs`); :func:`swapkl.recovery.recovery_table
.run_recovery` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob


@dataclass(frozen=True, kw_only=True)
class RecoveryJob(EngineJob):
    """Heal every checkpoint that swapkl export wrote into ``exports_dir`` (those removing one of ``budgets``
    blocks; None: all) and the unpruned control ``model`` with the same ``settings`` (the keyword arguments of
    :func:`swapkl.recovery.heal_settings.settings_from`) on the ``train`` text (a TrainText's keyword arguments),
    then score each before and after: perplexity on ``eval_data`` (an EvalSpec's dict), KL to the base on
    ``probe_data`` (a DataSpec or its dict; None: no KL) and the accuracy on ``task_files``. The table goes to
    ``out``, the healed checkpoints into ``healed_dir`` (new or empty); ``metadata``: the rows' labels (``model``,
    ``revision``)."""

    exports_dir: str
    out: str
    healed_dir: str
    settings: dict
    train: dict
    eval_data: dict
    probe_data: DataSpec | None = None
    task_files: tuple[str, ...] = ()
    budgets: tuple[int, ...] | None = None

    def __post_init__(self):
        self.coerce("probe_data", DataSpec)
        self.as_tuple("task_files", "budgets")
