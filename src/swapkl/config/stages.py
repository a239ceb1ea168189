"""The stage that runs one job per checkpoint and is not kept in a study folder (the probe), declared here.

Each :class:`~swapkl.study.Stage` says in one place its job description, what runs it, the model's config
section of its options and revisions, which of the job's fields are files and the settings that no config key
of their field's name gives. The stages of the studies kept in folders (:mod:`swapkl.studies`) register
themselves when that package is imported, which this module does, so :data:`STAGES` holds every stage by the
name a rule gives its job (``PARAMS.job("probe")``): :mod:`swapkl.config.rule_jobs` builds and runs a job from
it, and :meth:`swapkl.config.study_plan.StudyPlan.stage_checkpoints` reads a stage's revisions from it.
"""

from __future__ import annotations

import swapkl.studies  # noqa: F401  (every study folder registers its stage)
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.study import STAGES, Stage, canonical, register_stage


def _probe(params, wildcards) -> dict:
    return dict(pairs=params.plan.probe_pairs(wildcards.model),
                kl_options=canonical(params.model_config(wildcards)["kl"]), metadata=params.metadata(wildcards))


register_stage(Stage("probe", ProbeJob, "swapkl.probes.probe:run_probe",
                     files=("out", "protocols", "repr_out", "progress_path", "covariates_out"), settings=_probe))
