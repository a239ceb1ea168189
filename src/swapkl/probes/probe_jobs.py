"""Job description of the probe stage that loads a model: ``swapkl probe`` / rules probe_* (see
:mod:`swapkl.model.model_job`; the third test's healed probe is
:class:`swapkl.recovery.healed_jobs.HealedProbeJob`). Those that only read the probe tables lie with their
functions, without torch: :class:`swapkl.probes.aggregate.AggregateJob`,
:class:`swapkl.probes.disagreement.DisagreementJob`."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.kl_options import KLOptions
from swapkl.model.model_job import ForwardJob


@dataclass(frozen=True, kw_only=True)
class ProbeJob(ForwardJob):
    """What :func:`swapkl.probes.probe.run_probe` measures on one checkpoint: every variant of ``protocols`` x
    ``pairs``.

    ``out``: one Parquet file of every protocol, or ``{protocol: file}``: one file per protocol, each what a run of
    that protocol alone writes, from one sweep whose base pass serves them all; ``progress_path`` is then
    ``{protocol: file}`` too, and ``repr_out`` goes with deletion's file (else with the first protocol's).
    ``data``: the windows (a :class:`~swapkl.data.windows.DataSpec` or its dict).
    ``covariates_out``: also write the per-pair covariates (what :func:`swapkl.probes.covariates.run_covariates`
    writes), on this load of the checkpoint where it is their own (RoPE on, no ``compute_dtype``, ``rope_scaling``,
    ``logits_dtype`` or ``placement``), on a load of their own otherwise.
    ``kl_options`` (:class:`swapkl.model.kl_options.KLOptions` or its dict; default the clean KL), ``compute_dtype``,
    ``rope_scaling`` and ``logits_dtype`` (see :func:`swapkl.model.loading.load_model`) are recorded in the
    provenance.
    ``rope="off"`` (YAML's false reads the same) is the RoPE counterfactual: base and variants alike run with
    every rotation angle zero (cos = 1, sin = 0); refused on architectures without rotary embeddings, recorded in
    the provenance.
    ``placement`` (``device_map``, ``max_memory``, ``offload_folder``: :func:`swapkl.model.loading.placement_options`)
    spreads a model that does not fit on one device over the node's GPUs, CPU memory and disk.
    ``layers`` (optional) restricts the variants to those that only touch the given blocks
    (both blocks of a pair, the deleted block); every index must lie in ``[0, n_layers)``.
    ``progress_path`` persists finished (batch, variant) results so that a killed run started
    again with the same arguments resumes; it must not be one of the job's declared outputs.
    """

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
        if self.rope in (True, False):  # YAML's bare on / off
            object.__setattr__(self, "rope", "on" if self.rope else "off")
        if self.rope not in ("on", "off"):
            raise SwapKLError(f"rope must be 'on' or 'off', not {self.rope!r}")
