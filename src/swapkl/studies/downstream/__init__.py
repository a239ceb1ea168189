"""Downstream benchmarks (the paper's section "Downstream Task Benchmarks"), as a study in one folder: on every
checkpoint of a model with `downstream.enabled`, one job scores the tasks on the base model, on the pruning
guides' pruned models (where the checkpoint is pruned) and on the healed models and their control (where it is
healed), lm-eval's own task definitions deciding every score (docs/downstream.md).

Here: its declaration (below), its rules (``rules.smk``), its config section's schema (``schema.yaml``), its
table's caption and its figure (``figures.py`` draws it, ``downstream.rst`` is its caption). The job and its run
are :mod:`swapkl.relevance.downstream_jobs` and :mod:`swapkl.relevance.downstream` (the command
``swapkl downstream`` runs them too).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.figures.figure_registry import Figure, register
from swapkl.layout import DEMO_LAST_WORD_FILE, downstream_file, healed_models_dir, pruning_file
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.relevance.relevance_jobs import section_task_files
from swapkl.study import Stage, Study, guides_config_form, guides_job_form, register_study


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section names something to score."""
    section = model["downstream"]
    if not (section["tasks"] or section["demo_tasks"] or section["last_word_files"] or section["lm_eval_tasks"]):
        raise ConfigError(f"models.{name}.downstream: enabled but names no tasks, demo_tasks, last_word_files or "
                          "lm_eval_tasks")


def last_word_files(section: dict) -> list[str]:
    """The last-word files a section scores: its `last_word_files`, then the demo's where asked."""
    return list(section["last_word_files"]) + ([DEMO_LAST_WORD_FILE] if section["demo_tasks"] else [])


def _settings(params, wildcards) -> dict:
    """The task files, the guides whose pruned models are scored (None: every guide of the pruning table) and the
    rows' labels; the healed models come as a file (``healed_dir``), not a setting."""
    section = params.model_config(wildcards)["downstream"]
    return dict(healed=(), task_files=section_task_files(section), last_word_files=last_word_files(section),
                pruning_guides=guides_job_form(section["pruning_guides"]), label=wildcards.model,
                revision_label=wildcards.revision)


def _inputs(params, wildcards) -> dict:
    """The checkpoint and task files, the checkpoint's pruning table where it is pruned (and a guide is scored),
    and the folder of its healed models where it is healed and the section scores them."""
    model, revision = wildcards.model, wildcards.revision
    section = params.model_config(wildcards)["downstream"]
    inputs = {"checkpoint": params.checkpoint_input(wildcards), "tasks": section_task_files(section),
              "last_word": last_word_files(section)}
    if revision in params.plan.stage_revisions("prune", model) and section["pruning_guides"] != []:
        inputs["pruning"] = pruning_file(model, revision)
    if section["healed"] and (model, revision) in params.plan.stage_checkpoints("heal"):
        inputs["healed"] = healed_models_dir(model, revision)
    return inputs


def _files(wildcards, input, output) -> dict:
    return {"out": output.downstream, "pruning": input.get("pruning"), "healed_dir": input.get("healed")}


STUDY = register_study(Study(
    name="downstream", folder=Path(__file__).parent,
    stage=Stage("downstream", DownstreamJob, "swapkl.relevance.downstream:run_downstream", "downstream",
                ("out", "pruning", "healed_dir"), _settings),
    summary="the paper's downstream tasks scored on the base model, the pruning guides' pruned models and the "
            "healed models, by lm-eval's task definitions",
    outputs={"downstream": downstream_file("{model}", "{revision}")},
    tables={"downstream": "downstream_table.rst"},
    rules={"score_downstream": "checkpoint", "aggregate_downstream": "once"},
    inputs=_inputs, files=_files, check=check,
    defaults=(("lm_eval_tasks", DownstreamJob, "lm_eval_tasks"), ("limit", DownstreamJob, "limit"),
              ("pruning_guides", DownstreamJob, "pruning_guides", guides_config_form)),
))

register(Figure("downstream", "swapkl.studies.downstream.figures:plot_downstream",
                {"downstream": STUDY.outputs["downstream"]}, "checkpoint", "recovery",
                "downstream task scores of a checkpoint's base, pruned and healed models (a table figure)",
                targets="downstream", labels={"figure": "downstream benchmarks"},
                caption=str(STUDY.folder / "downstream.rst")))
