"""Job description of the third test's probe, ``swapkl healed-probe`` / rule probe_healed (see
:mod:`swapkl.model.model_job`); torch-free, so the workflow builds it (:mod:`swapkl.config.rule_jobs`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import Job
from swapkl.recovery.heal_settings import HealSettings, TrainText, settings_from

#: the healed protocols, by the protocol whose variants they heal
HEALED = {"healed_replacement": "replacement", "healed_interchange": "interchange", "healed_deletion": "deletion"}
#: how the variants to heal are chosen (:func:`swapkl.recovery.healed.select`)
SELECTIONS = ("extremes", "random", "all")


@dataclass(frozen=True, kw_only=True)
class HealedProbeJob(Job):
    """What :func:`swapkl.recovery.healed.run_healed_probe` measures on one checkpoint (the third test; see
    :mod:`swapkl.recovery.healed`): the variants of ``protocols`` chosen from the probe tables ``probe_files`` by
    ``selection`` (``k`` per end, ``select_seed`` for ``random``), each healed toward the base model on the
    ``calibration`` text (a TrainText or its dict; another source than ``data``, the probe windows) with
    ``settings`` (HealSettings, or the keyword arguments of :func:`swapkl.recovery.heal_settings.settings_from`),
    its KL measured after each step count of ``curve_steps`` and after the last, into ``out``."""

    model: str
    probe_files: tuple[str, ...]
    out: str
    data: DataSpec
    calibration: TrainText
    settings: HealSettings
    protocols: tuple[str, ...] = tuple(HEALED)
    selection: str = "extremes"
    k: int = 2
    select_seed: int = 0
    curve_steps: tuple[int, ...] = ()
    revision: str | None = None
    label: str | None = None
    revision_label: str | None = None
    dtype: str = "float32"
    device: str = "auto"
    batch_size: int = 8

    def __post_init__(self):
        self.coerce("data", DataSpec)
        self.coerce("calibration", TrainText)
        self.coerce("settings", settings_from)
        self.as_tuple("probe_files", "protocols", "curve_steps")

