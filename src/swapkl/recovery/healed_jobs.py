"""Job description of the third test's probe, ``swapkl healed-probe`` / rule probe_healed (see
:mod:`swapkl.model.model_job`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import Job
from swapkl.recovery.heal import HealSettings, TrainText, settings_from
from swapkl.recovery.healed import HEALED, run_healed_probe


@dataclass(frozen=True, kw_only=True)
class HealedProbeJob(Job):
    """:func:`swapkl.recovery.healed.run_healed_probe` of one checkpoint (``calibration``: a TrainText or its
    dict; ``settings``: HealSettings or the keyword arguments of :func:`swapkl.recovery.heal.settings_from`)."""

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

    def run(self):
        return run_healed_probe(**self.arguments())
