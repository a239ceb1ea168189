"""Job descriptions of the probe stages that load a model: ``swapkl probe`` / rule probe_*, ``swapkl
healed-probe`` / rule probe_healed (see :mod:`swapkl.model.model_job`). Those that only read the probe tables
lie with their functions, without torch: :class:`swapkl.probes.aggregate.AggregateJob`,
:class:`swapkl.probes.disagreement.DisagreementJob`."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.windows import DataSpec
from swapkl.model.kl import KLOptions
from swapkl.model.model_job import ForwardJob, Job
from swapkl.probes.healed import HEALED, run_healed_probe
from swapkl.probes.probe import run_probe
from swapkl.recovery.heal import HealSettings, TrainText, settings_from


@dataclass(frozen=True, kw_only=True)
class ProbeJob(ForwardJob):
    """:func:`swapkl.probes.probe.run_probe` of one checkpoint (``data``, ``kl_options``: objects or their
    dicts; ``out`` and ``progress_path``: one file, or ``{protocol: file}`` for one file per protocol)."""

    out: str | dict[str, str]
    data: DataSpec
    protocols: tuple[str, ...] = ("replacement", "interchange", "deletion")
    pairs: str = "adjacent"
    layers: str | None = None
    rope: str = "on"
    kl_options: KLOptions | None = None
    repr_out: str | None = None
    progress_path: str | dict[str, str] | None = None
    covariates_out: str | None = None

    def __post_init__(self):
        self.coerce("data", DataSpec)
        self.coerce("kl_options", KLOptions, none=True)
        self.as_tuple("protocols")

    def run(self) -> None:
        run_probe(**self.arguments())


@dataclass(frozen=True, kw_only=True)
class HealedProbeJob(Job):
    """:func:`swapkl.probes.healed.run_healed_probe` of one checkpoint (``calibration``: a TrainText or its
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
