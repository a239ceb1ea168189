"""Job description of the residual Jacobian norms: rule measure_jacobian (see :mod:`swapkl.model.model_job`);
:func:`swapkl.studies.jacobian.run.run_jacobian` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob

#: the estimators of ||J_k||_2 (swapkl.studies.jacobian.run)
METHODS = ("exact", "finite_difference")


@dataclass(frozen=True, kw_only=True)
class JacobianJob(EngineJob):
    """Every block's ||J_k||_2 on one checkpoint, estimated by ``method`` on the first ``n_prompts`` windows of
    ``data`` (a DataSpec or its dict), written to ``out``; ``eps`` is the finite-difference step, ``seed`` seeds
    each prompt's start vector (prompt p: ``seed + p``)."""

    out: str
    data: DataSpec
    method: str = "exact"
    iterations: int = 20
    eps: float = 1e-3
    n_prompts: int = 10
    seed: int = 0

    def __post_init__(self):
        self.coerce("data", DataSpec)
