"""Job description of the predictor-validity measurement of one checkpoint: rule measure_predictor_validity (see
:mod:`swapkl.model.model_job`); :func:`swapkl.studies.predictor_validity.run.run_predictor_validity` runs it."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.model.model_job import EngineJob


@dataclass(frozen=True, kw_only=True)
class PredictorValidityJob(EngineJob):
    """Remove each block of ``model`` alone, measure the perplexity on ``eval_data`` (the keyword arguments of
    :class:`swapkl.pruning.eval_spec.EvalSpec`: the model's ``prune.eval`` text), and correlate the costs with the
    pair scores that ``aggregate`` holds for the checkpoint that ``metadata`` names (``model``, ``revision``: the
    config's labels); into ``out``."""

    out: str
    aggregate: str
    eval_data: dict
