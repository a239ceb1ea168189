"""The job of each rule that runs one stage, built from the config and run, from the stage's declaration.

A rule names its job (``params: job=PARAMS.job("probe")``) and gives its files apart
(``files=PARAMS.probe_files``); workflow/scripts/run_job.py builds the job description of the two and runs it.
Every field of a job for which the model's config has a key of the same name (in the stage's section first,
then at the model's level) takes that key's value (:meth:`swapkl.model.model_job.Job.fields_from`), so a new option
is the schema's key, the job's field, the command line's flag and the code that reads it; a stage's declaration
(:mod:`swapkl.config.stages`) wires only the fields whose values are not a config key of their name. The settings
are a plain dict of the wildcards alone, so Snakemake re-runs a job whose settings changed (it does not compare
parameters computed from a job's files, which is why they travel apart)."""

from __future__ import annotations

from swapkl.config.stages import STAGES
from swapkl.hub.absence import propagate
from swapkl.model.model_job import Job, ModelJob


def job_settings(kind: str, params, wildcards) -> dict:
    """The settings of the ``kind`` job of these wildcards (``params``: the run's
    :class:`~swapkl.config.rule_params.RuleParams`): ``{"kind": kind, field: value, ...}``."""
    return {"kind": kind, **STAGES[kind].job_settings(params, wildcards)}


def build_job(settings: dict, files: dict) -> Job:
    """The job description of a rule's ``job`` and ``files`` params."""
    fields = dict(settings)
    kind = fields.pop("kind")
    return STAGES[kind].job(**fields, **files)


def run_rule_job(settings: dict, files: dict, outputs) -> None:
    """Run the job of a rule's ``job`` and ``files`` params; a job on a seed-family member's absent revision
    writes its absence markers at ``outputs`` instead (:func:`swapkl.hub.absence.propagate`)."""
    job = build_job(settings, files)
    if isinstance(job, ModelJob) and propagate(job.model, outputs):
        return
    STAGES[settings["kind"]].run(job)
