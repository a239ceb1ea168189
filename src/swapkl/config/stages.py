"""The stages that run one job per checkpoint and are not (yet) kept in a study folder, declared here.

Each :class:`~swapkl.study.Stage` says in one place its job description, what runs it, the model's config
section of its options and revisions, which of the job's fields are files and the settings that no config key
of their field's name gives. The stages of the studies kept in folders (:mod:`swapkl.studies`) register
themselves when that package is imported, which this module does, so :data:`STAGES` holds every stage by the
name a rule gives its job (``PARAMS.job("prune")``): :mod:`swapkl.config.rule_jobs` builds and runs a job from
it, and :meth:`swapkl.config.study_plan.StudyPlan.stage_checkpoints` reads a stage's revisions from it.
"""

from __future__ import annotations

import swapkl.studies  # noqa: F401  (every study folder registers its stage)
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.study import STAGES, Stage, canonical, register_stage, without_nulls


def _probe(params, wildcards) -> dict:
    return dict(pairs=params.plan.probe_pairs(wildcards.model),
                kl_options=canonical(params.model_config(wildcards)["kl"]), metadata=params.metadata(wildcards))


def _prune(params, wildcards) -> dict:
    prune = params.model_config(wildcards)["prune"]
    return dict(budgets=list(range(1, prune["max_budget"] + 1)), eval_data=without_nulls(prune["eval"]),
                calib_data=without_nulls(prune["calibration"]), selection=params.selection_options(wildcards),
                metadata=params.prune_metadata(wildcards))


for _stage in (
    Stage("probe", ProbeJob, "swapkl.probes.probe:run_probe",
          files=("out", "protocols", "repr_out", "progress_path", "covariates_out"), settings=_probe),
    Stage("prune", PruneJob, "swapkl.pruning.prune:run_pruning", "prune",
          ("probe_files", "repr_file", "out", "agreement_out"), _prune),
):
    register_stage(_stage)
