"""The job of each rule that runs one stage, built from the config in this one place.

A rule names its job (``params: job=PARAMS.job("probe")``) and gives its files apart
(``files=PARAMS.probe_files``); workflow/scripts/run_job.py builds the job description of the two and runs it.
Every field of a job for which the model's config has a key of the same name (in the stage's section first,
then at the model's level) takes that key's value (:meth:`swapkl.model.model_job.Job.fields_from`), so a new option
is the schema's key, the job's field, the command line's flag and the code that reads it; the builders below
wire only the fields whose values are not a config key of their name. The settings are a plain dict of the
wildcards alone, so Snakemake re-runs a job whose settings changed (it does not compare parameters computed
from a job's files, which is why they travel apart)."""

from __future__ import annotations

from swapkl.config.ablation_models import PE_PROTOCOLS, pe_checkpoint, pe_metadata, pe_pairs, pe_probe_data
from swapkl.config.job_settings import canonical, without_nulls
from swapkl.hub.absence import propagate
from swapkl.model.model_job import Job, ModelJob
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.recovery.healed_jobs import HealedProbeJob
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.relevance.relevance_jobs import RelevanceJob
from swapkl.studies.sequential_jobs import SEQUENTIAL_DECISIONS, SEQUENTIAL_DESIGN, SequentialJob
from swapkl.studies.span_jobs import SpansJob

#: the job description of each kind of rule job, by the name the rules give it
JOBS: dict[str, type[Job]] = {"probe": ProbeJob, "pe_probe": ProbeJob, "spans": SpansJob, "prune": PruneJob,
                              "relevance": RelevanceJob, "downstream": DownstreamJob,
                              "healed_probe": HealedProbeJob, "sequential": SequentialJob}

#: the fields of each kind that are files (the rule's ``files`` param gives them)
FILE_FIELDS = {"probe": ("out", "protocols", "repr_out", "progress_path", "covariates_out"), "pe_probe": ("out",),
               "spans": ("out",), "prune": ("probe_files", "repr_file", "out", "agreement_out"),
               "relevance": ("out", "pruning"), "downstream": ("out", "pruning", "healed_dir"),
               "healed_probe": ("probe_files", "out"), "sequential": ("out", "decisions_out", "progress_path")}


def _on_checkpoint(kind: str, params, wildcards, section: str | None = None, **explicit) -> dict:
    """The settings of a ``kind`` job on the wildcards' checkpoint: ``explicit``, then the config keys named like
    its fields, in the model's ``section`` first, then at the model's level (the checkpoint, its placement and
    the probe windows as the workflow keeps them)."""
    model = params.model_config(wildcards)
    sources = ([model[section]] if section else []) + [model]
    explicit = {"model": params.checkpoint_dir(wildcards), "placement": params.placement(wildcards),
                "data": params.probe_data(wildcards), **explicit}
    cls = JOBS[kind]
    return cls.fields_from(*sources, skip=FILE_FIELDS.get(kind, ()),
                           **{k: v for k, v in explicit.items() if k in cls.field_names()})


def _probe(params, wildcards) -> dict:
    return _on_checkpoint("probe", params, wildcards, pairs=params.plan.probe_pairs(wildcards.model),
                          kl_options=canonical(params.model_config(wildcards)["kl"]),
                          metadata=params.metadata(wildcards))


def _spans(params, wildcards) -> dict:
    return _on_checkpoint("spans", params, wildcards, "spans", metadata=params.metadata(wildcards))


def _prune(params, wildcards) -> dict:
    prune = params.model_config(wildcards)["prune"]
    return _on_checkpoint("prune", params, wildcards, "prune", budgets=list(range(1, prune["max_budget"] + 1)),
                          eval_data=without_nulls(prune["eval"]), calib_data=without_nulls(prune["calibration"]),
                          selection=params.selection_options(wildcards), metadata=params.prune_metadata(wildcards))


def _relevance(params, wildcards) -> dict:
    return _on_checkpoint("relevance", params, wildcards, "relevance", task_files=params.relevance_tasks(wildcards),
                          lm_data=params.relevance_lm(wildcards), lm_sets=params.relevance_lm_sets(wildcards),
                          harness_tasks=params.relevance_lm_eval_tasks(wildcards),
                          pruning_guides=params.relevance_pruning_guides(wildcards), label=wildcards.model,
                          revision_label=wildcards.revision)


def _downstream(params, wildcards) -> dict:
    """(the section's ``healed`` says whether the healed models are scored: their folder is a file, ``healed_dir``)"""
    return _on_checkpoint("downstream", params, wildcards, "downstream", healed=(),
                          task_files=params.downstream_tasks(wildcards),
                          last_word_files=params.downstream_last_word(wildcards),
                          pruning_guides=params.downstream_pruning_guides(wildcards), label=wildcards.model,
                          revision_label=wildcards.revision)


def _healed_probe(params, wildcards) -> dict:
    section = params.model_config(wildcards)["healed_probes"]
    return _on_checkpoint("healed_probe", params, wildcards, "healed_probes", select_seed=section["seed"],
                          label=wildcards.model, revision_label=wildcards.revision)


def _sequential(params, wildcards) -> dict:
    """The section's design and decision keys become the job's ``design`` and ``decisions``; its ``data`` (the
    pool of windows) defaults to the model's probe windows."""
    section = params.model_config(wildcards)["sequential"]
    pool = without_nulls(section["data"]) if section.get("data") else params.probe_data(wildcards)
    return _on_checkpoint("sequential", params, wildcards, "sequential", data=pool,
                          design={k: section[k] for k in SEQUENTIAL_DESIGN},
                          decisions={k: section[k] for k in SEQUENTIAL_DECISIONS},
                          metadata=params.metadata(wildcards))


def _pe_probe(params, wildcards) -> dict:
    """A trained model of the position-encoding ablation (its own config section, no model entry)."""
    cfg = params.cfg
    return ProbeJob.fields_from(model=pe_checkpoint(cfg, wildcards.pe_model), protocols=list(PE_PROTOCOLS),
                             pairs=pe_pairs(cfg), data=pe_probe_data(cfg),
                             metadata=pe_metadata(cfg, wildcards.pe_model))


#: the settings of each kind of job, from the wildcards
BUILDERS = {"probe": _probe, "pe_probe": _pe_probe, "spans": _spans, "prune": _prune, "relevance": _relevance,
            "downstream": _downstream, "healed_probe": _healed_probe, "sequential": _sequential}


def _run_probe(job: ProbeJob) -> None:
    from swapkl.probes.probe import run_probe  # torch: imported where the job runs, not where it is built

    run_probe(job)


def _run_spans(job: SpansJob) -> None:
    from swapkl.studies.spans import run_spans

    run_spans(job)


def _run_pruning(job: PruneJob) -> None:
    from swapkl.pruning.prune import run_pruning

    run_pruning(job)


def _run_relevance(job: RelevanceJob) -> None:
    from swapkl.relevance.accrel import run_relevance

    run_relevance(job)


def _run_downstream(job: DownstreamJob) -> None:
    from swapkl.relevance.downstream import run_downstream

    run_downstream(job)


def _run_healed_probe(job: HealedProbeJob) -> None:
    from swapkl.recovery.healed import run_healed_probe

    run_healed_probe(job)


def _run_sequential(job: SequentialJob) -> None:
    from swapkl.studies.sequential_probe import run_sequential_probe

    run_sequential_probe(job)


#: what runs a job of each kind
RUNNERS = {"probe": _run_probe, "pe_probe": _run_probe, "spans": _run_spans, "prune": _run_pruning,
           "relevance": _run_relevance, "downstream": _run_downstream,
           "healed_probe": _run_healed_probe, "sequential": _run_sequential}


def job_settings(kind: str, params, wildcards) -> dict:
    """The settings of the ``kind`` job of these wildcards (``params``: the run's
    :class:`~swapkl.config.rule_params.RuleParams`): ``{"kind": kind, field: value, ...}``."""
    return {"kind": kind, **BUILDERS[kind](params, wildcards)}


def build_job(settings: dict, files: dict) -> Job:
    """The job description of a rule's ``job`` and ``files`` params."""
    fields = dict(settings)
    kind = fields.pop("kind")
    return JOBS[kind](**fields, **files)


def run_rule_job(settings: dict, files: dict, outputs) -> None:
    """Run the job of a rule's ``job`` and ``files`` params; a job on a seed-family member's absent revision
    writes its absence markers at ``outputs`` instead (:func:`swapkl.hub.absence.propagate`)."""
    job = build_job(settings, files)
    if isinstance(job, ModelJob) and propagate(job.model, outputs):
        return
    RUNNERS[settings["kind"]](job)
