"""Accuracy-based layer relevance (the second paper's AccRel), as a study in one folder: on every checkpoint of a
model with `relevance.enabled`, one job scores the base model and every single-block deletion (and, where the
checkpoint is pruned too, the guides' pruned models) on multiple-choice tasks and language-modelling windows;
the gathered table is then summarised against the cosine-similarity importance (BI) and across tasks
(docs/relevance.md).

Here: its declaration (below), its rules (``rules.smk``), its config section's schema (``schema.yaml``) and its
two tables' captions. The job, its scoring and its statistics are :mod:`swapkl.relevance` (the command ``swapkl
relevance`` runs them too), its figures the family :mod:`swapkl.figures.relevance`.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.layout import pruning_file, relevance_file
from swapkl.relevance.relevance_jobs import DEMO_TASKS, RelevanceJob, section_task_files
from swapkl.study import Stage, Study, guides_config_form, guides_job_form, register_study, without_nulls


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section names something to score, and no further language-modelling set takes the name of
    the `lm` data or of a task (their rows would share one task name)."""
    section = model["relevance"]
    if not (section["tasks"] or section["demo_tasks"] or "lm" in section or section["lm_eval_tasks"]
            or section["lm_sets"]):
        raise ConfigError(f"models.{name}.relevance: enabled but names no tasks, demo_tasks, lm_eval_tasks or "
                          "lm data")
    if "lm" in section and "lm" in section["lm_sets"]:
        raise ConfigError(f"models.{name}.relevance.lm_sets.lm: the name lm is the `lm` data's")
    taken = {task: f"models.{name}.relevance.lm_eval_tasks" for task in section["lm_eval_tasks"]}
    if section["demo_tasks"]:
        taken.update({task: f"models.{name}.relevance.demo_tasks" for task in DEMO_TASKS})
    for task in section["lm_sets"]:
        if task in taken:
            raise ConfigError(f"models.{name}.relevance.lm_sets.{task}: the task name {task!r} is also in "
                              f"{taken[task]}; their rows would share one task name")


def _settings(params, wildcards) -> dict:
    """The task files, the language-modelling windows without their null keys, the lm-eval task names, the guides
    whose pruned models are scored (None: every guide of the pruning table) and the rows' labels."""
    section = params.model_config(wildcards)["relevance"]
    lm = section.get("lm")
    return dict(task_files=section_task_files(section), lm_data=None if lm is None else without_nulls(lm),
                lm_sets={name: without_nulls(spec) for name, spec in sorted(section["lm_sets"].items())},
                harness_tasks=list(section["lm_eval_tasks"]), pruning_guides=guides_job_form(section["pruning_guides"]),
                label=wildcards.model, revision_label=wildcards.revision)


def _inputs(params, wildcards) -> dict:
    """The checkpoint, the task files and the language-modelling texts where they are files, and the checkpoint's
    pruning table where it is pruned (and a guide is scored)."""
    section = params.model_config(wildcards)["relevance"]
    specs = ([section["lm"]] if "lm" in section else []) + list(section["lm_sets"].values())
    inputs = {"checkpoint": params.checkpoint_input(wildcards), "tasks": section_task_files(section),
              "text": params.text_inputs(*specs)}
    if wildcards.revision in params.plan.stage_revisions("prune", wildcards.model) and section["pruning_guides"] != []:
        inputs["pruning"] = pruning_file(wildcards.model, wildcards.revision)
    return inputs


def _files(wildcards, input, output) -> dict:
    return {"out": output.relevance, "pruning": input.get("pruning")}


STUDY = register_study(Study(
    name="relevance", folder=Path(__file__).parent,
    stage=Stage("relevance", RelevanceJob, "swapkl.relevance.accrel:run_relevance", "relevance", ("out", "pruning"),
                _settings),
    summary="accuracy-based relevance (AccRel) of every block on tasks and language-modelling windows, and the "
            "pruned models' scores, summarised against cosine-similarity importance (BI)",
    outputs={"relevance": relevance_file("{model}", "{revision}")},
    tables={"relevance": "relevance_table.rst", "relevance_stats": "relevance_stats.rst"},
    rules={"score_relevance": "checkpoint", "aggregate_relevance": "once", "summarise_relevance": "once"},
    inputs=_inputs, files=_files, check=check,
    defaults=(("lm_eval_tasks", RelevanceJob, "harness_tasks"),
              ("pruning_guides", RelevanceJob, "pruning_guides", guides_config_form)),
))
