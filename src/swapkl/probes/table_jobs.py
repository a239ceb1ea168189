"""The job descriptions of the probes' table stages: the aggregate of probe files (:class:`AggregateJob`) and the
disagreement of the tests of one checkpoint (:class:`DisagreementJob`). Like every job description they import no
numpy, pandas or torch, so that the config package reads their defaults where Snakemake runs."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.model.model_job import Job


@dataclass(frozen=True, kw_only=True)
class AggregateJob(Job):
    """What :func:`swapkl.probes.aggregate.aggregate` writes: the probe files ``probe_files`` and the
    representation files ``repr_files`` in one table at ``out``, each model's pairs summarised over its
    ``pair_sets`` (model label -> its pair sets), the CI of the mean gap from ``n_boot`` bootstrap resamples
    drawn with ``seed``."""

    probe_files: tuple[str, ...]
    repr_files: tuple[str, ...]
    out: str
    pair_sets: dict
    n_boot: int = 1000
    seed: int = 0

    def __post_init__(self):
        self.as_tuple("probe_files", "repr_files")


@dataclass(frozen=True, kw_only=True)
class DisagreementJob(Job):
    """What :func:`swapkl.probes.disagreement.run_test_agreement` writes: how much every test of one checkpoint
    disagrees, from its probe files ``probe_files`` (with ``repr_file``, ``healed_file``, ``relevance_file``
    where given, and ``members``: seed family member -> its probe files), with bootstrap CIs of ``n_boot``
    resamples drawn with ``seed``, into ``out``; ``model`` and ``revision`` label its rows."""

    probe_files: tuple[str, ...]
    out: str
    model: str | None = None
    revision: str | None = None
    repr_file: str | None = None
    healed_file: str | None = None
    relevance_file: str | None = None
    members: dict | None = None
    n_boot: int = 1000
    seed: int = 0

    def __post_init__(self):
        self.as_tuple("probe_files")
