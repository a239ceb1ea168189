"""Job description of the probe stage that loads a model: ``swapkl probe`` / rule probe_* (see
:mod:`swapkl.model.model_job`; the third test's healed probe is
:class:`swapkl.recovery.healed_jobs.HealedProbeJob`). Those that only read the probe tables lie with their functions, without torch: :class:`swapkl.probes.aggregate.AggregateJob`,
:class:`swapkl.probes.disagreement.DisagreementJob`."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.windows import DataSpec
from swapkl.model.kl import KLOptions
from swapkl.model.model_job import ForwardJob
from swapkl.probes.probe import run_probe


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
