"""The stages of the workflow that run one job each per checkpoint, each declared once.

A :class:`Stage` says in one place what was spread over four parallel tables keyed by the same kind strings:
its job description (the frozen dataclass of its options and their defaults), what runs it (a function named as
``"module:function"``, imported only where the job runs, so that building the job never imports torch), the
model's config section that holds its options and chooses its revisions (``enabled``, ``revisions``), which of
the job's fields are files (the rule gives those apart) and the settings that are not a config key of their
field's name. :data:`STAGES` holds them by the name a rule gives its job (``PARAMS.job("prune")``);
:mod:`swapkl.config.rule_jobs` builds and runs a job from its stage, and
:meth:`swapkl.config.study_plan.StudyPlan.stage_checkpoints` reads the revisions of a stage from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from swapkl.config.ablation_models import PE_PROTOCOLS, pe_checkpoint, pe_metadata, pe_pairs, pe_probe_data
from swapkl.config.job_settings import canonical, without_nulls
from swapkl.model.model_job import Job
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.recovery.healed_jobs import HealedProbeJob
from swapkl.registry import Registry
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.relevance.relevance_jobs import RelevanceJob
from swapkl.studies.sequential_jobs import SEQUENTIAL_DECISIONS, SEQUENTIAL_DESIGN, SequentialJob
from swapkl.studies.span_jobs import SpansJob


@dataclass(frozen=True)
class Stage:
    """One stage: ``job`` its description, ``runner`` the function that runs one (``"module:function"``, or the
    function itself), ``section`` the model's config section of its options and revisions (None: the model's
    own keys, every revision), ``files`` the job's fields that are files, ``settings(params, wildcards)`` the
    values of the fields that no config key of their name gives, ``on_checkpoint``: its job runs on one of the
    study's checkpoints (the checkpoint, placement and probe windows come from the model's config)."""

    kind: str
    job: type[Job]
    runner: str | Callable
    section: str | None = None
    files: tuple[str, ...] = ()
    settings: Callable | None = None
    on_checkpoint: bool = True

    def job_settings(self, params, wildcards) -> dict:
        """The settings of this stage's job on the wildcards (``params``: the run's
        :class:`~swapkl.config.rule_params.RuleParams`): the explicit ones, then the config keys named like the
        job's fields, in the model's section first, then at the model's level."""
        explicit = self.settings(params, wildcards) if self.settings else {}
        if not self.on_checkpoint:
            return self.job.fields_from(**explicit)
        model = params.model_config(wildcards)
        sources = ([model[self.section]] if self.section else []) + [model]
        explicit = {"model": params.checkpoint_dir(wildcards), "placement": params.placement(wildcards),
                    "data": params.probe_data(wildcards), **explicit}
        return self.job.fields_from(*sources, skip=self.files,
                                    **{k: v for k, v in explicit.items() if k in self.job.field_names()})

    def run(self, job: Job) -> None:
        """Run ``job`` with the stage's runner (imported now: torch, where the job runs)."""
        runner = self.runner
        if isinstance(runner, str):
            module, name = runner.split(":")
            runner = getattr(importlib.import_module(module), name)
        runner(job)


#: every stage that runs one job per checkpoint, by the name its rule gives its job
STAGES: Registry[Stage] = Registry("stage")


def register_stage(stage: Stage) -> Stage:
    return STAGES.add(stage.kind, stage)


def _probe(params, wildcards) -> dict:
    return dict(pairs=params.plan.probe_pairs(wildcards.model),
                kl_options=canonical(params.model_config(wildcards)["kl"]), metadata=params.metadata(wildcards))


def _pe_probe(params, wildcards) -> dict:
    """A trained model of the position-encoding ablation (its own config section, no model entry)."""
    cfg = params.cfg
    return dict(model=pe_checkpoint(cfg, wildcards.pe_model), protocols=list(PE_PROTOCOLS), pairs=pe_pairs(cfg),
                data=pe_probe_data(cfg), metadata=pe_metadata(cfg, wildcards.pe_model))


def _metadata(params, wildcards) -> dict:
    return dict(metadata=params.metadata(wildcards))


def _prune(params, wildcards) -> dict:
    prune = params.model_config(wildcards)["prune"]
    return dict(budgets=list(range(1, prune["max_budget"] + 1)), eval_data=without_nulls(prune["eval"]),
                calib_data=without_nulls(prune["calibration"]), selection=params.selection_options(wildcards),
                metadata=params.prune_metadata(wildcards))


def _relevance(params, wildcards) -> dict:
    return dict(task_files=params.relevance_tasks(wildcards), lm_data=params.relevance_lm(wildcards),
                lm_sets=params.relevance_lm_sets(wildcards), harness_tasks=params.relevance_lm_eval_tasks(wildcards),
                pruning_guides=params.relevance_pruning_guides(wildcards), label=wildcards.model,
                revision_label=wildcards.revision)


def _downstream(params, wildcards) -> dict:
    """(the section's ``healed`` says whether the healed models are scored: their folder is a file, ``healed_dir``)"""
    return dict(healed=(), task_files=params.downstream_tasks(wildcards),
                last_word_files=params.downstream_last_word(wildcards),
                pruning_guides=params.downstream_pruning_guides(wildcards), label=wildcards.model,
                revision_label=wildcards.revision)


def _healed_probe(params, wildcards) -> dict:
    section = params.model_config(wildcards)["healed_probes"]
    return dict(select_seed=section["seed"], label=wildcards.model, revision_label=wildcards.revision)


def _sequential(params, wildcards) -> dict:
    """The section's design and decision keys become the job's ``design`` and ``decisions``; its ``data`` (the
    pool of windows) defaults to the model's probe windows."""
    section = params.model_config(wildcards)["sequential"]
    pool = without_nulls(section["data"]) if section.get("data") else params.probe_data(wildcards)
    return dict(data=pool, design={k: section[k] for k in SEQUENTIAL_DESIGN},
                decisions={k: section[k] for k in SEQUENTIAL_DECISIONS}, metadata=params.metadata(wildcards))


for _stage in (
    Stage("probe", ProbeJob, "swapkl.probes.probe:run_probe",
          files=("out", "protocols", "repr_out", "progress_path", "covariates_out"), settings=_probe),
    Stage("pe_probe", ProbeJob, "swapkl.probes.probe:run_probe", files=("out",), settings=_pe_probe,
          on_checkpoint=False),
    Stage("spans", SpansJob, "swapkl.studies.spans:run_spans", "spans", ("out",), _metadata),
    Stage("prune", PruneJob, "swapkl.pruning.prune:run_pruning", "prune",
          ("probe_files", "repr_file", "out", "agreement_out"), _prune),
    Stage("relevance", RelevanceJob, "swapkl.relevance.accrel:run_relevance", "relevance", ("out", "pruning"),
          _relevance),
    Stage("downstream", DownstreamJob, "swapkl.relevance.downstream:run_downstream", "downstream",
          ("out", "pruning", "healed_dir"), _downstream),
    Stage("healed_probe", HealedProbeJob, "swapkl.recovery.healed:run_healed_probe", "healed_probes",
          ("probe_files", "out"), _healed_probe),
    Stage("sequential", SequentialJob, "swapkl.studies.sequential_probe:run_sequential_probe", "sequential",
          ("out", "decisions_out", "progress_path"), _sequential),
):
    register_stage(_stage)
