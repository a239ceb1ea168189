"""Recovery after pruning, as a study in one folder: on every checkpoint whose pruning guides are exported
(prune.export_guides) of a model with `heal.enabled`, one job heals each exported pruned model and the unpruned
control with the same short fine-tune, then measures perplexity and KL to the base model (and the relevance
tasks' accuracy, where the model is scored on them) before and after (docs/recovery.md).

Here: its declaration (below), its rules (``rules.smk``), its config section's schema (``schema.yaml``), its
table's caption and its figure (``figures.py`` draws it, ``recovery.rst`` is its caption). The job and its run are
:mod:`swapkl.recovery.recovery_jobs` and :mod:`swapkl.recovery.recovery_table`, the heal itself
:mod:`swapkl.recovery.heal` (the command ``swapkl heal`` heals one checkpoint the same way).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.figures.figure_registry import Figure, register
from swapkl.layout import export_dir, healed_models_dir, recovery_file
from swapkl.recovery.heal_settings import TrainText
from swapkl.recovery.recovery_jobs import RecoveryJob
from swapkl.relevance.relevance_jobs import section_task_files
from swapkl.study import Stage, Study, register_study, without_nulls


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section has exported pruned models to heal."""
    if not (model["prune"]["enabled"] and model["prune"]["export_guides"]):
        raise ConfigError(f"models.{name}.heal: healing starts from the exported pruned models: enable prune and "
                          "name prune.export_guides")


def exported_revisions(plan, model: str) -> list[str]:
    """The revisions healing runs on: those whose pruning guides' choices the model exports."""
    return [revision for owner, revision in plan.export_checkpoints() if owner == model]


def _settings(params, wildcards) -> dict:
    """The heal text without its null keys (the job's defaults then apply), the pruning evaluation text, the probe
    windows of the KL to the base and the rows' labels; `budgets` and `settings` are the section's keys of their
    names."""
    model = params.model_config(wildcards)
    return dict(train=without_nulls(model["heal"]["train"]), eval_data=params.prune_eval(wildcards),
                probe_data=params.probe_data(wildcards), metadata=params.metadata(wildcards))


def _inputs(params, wildcards) -> dict:
    """The export's inputs (the checkpoint, its pruning table), its exported models, the heal and evaluation texts where they are files,
    and the relevance tasks where the model is scored on them (the healed models are scored on them too)."""
    model = params.model_config(wildcards)
    return {**params.export_inputs(wildcards), "exports": export_dir(wildcards.model, wildcards.revision),
            "text": params.text_inputs(model["heal"]["train"], model["prune"]["eval"]),
            "tasks": section_task_files(model["relevance"]) if model["relevance"]["enabled"] else []}


def _files(wildcards, input, output) -> dict:
    return {"exports_dir": input.exports, "out": output.recovery, "healed_dir": output.healed,
            "task_files": list(input.tasks)}


STUDY = register_study(Study(
    name="heal", folder=Path(__file__).parent,
    stage=Stage("heal", RecoveryJob, "swapkl.recovery.recovery_table:run_recovery", "heal",
                ("exports_dir", "out", "healed_dir", "task_files"), _settings),
    summary="recovery after pruning: every exported pruned model and the unpruned control healed alike, then "
            "scored before and after",
    outputs={"recovery": recovery_file("{model}", "{revision}")},
    tables={"recovery": "recovery_table.rst"},
    rules={"heal_pruned_models": "checkpoint", "aggregate_recovery": "once"},
    inputs=_inputs, files=_files, check=check, figures="once", follows=exported_revisions,
    defaults=(("budgets", RecoveryJob, "budgets"), ("train#split", TrainText, "split")),
))

#: where a checkpoint's healed models go (rule heal_pruned_models; the downstream benchmarks score them)
HEALED_MODELS = healed_models_dir("{model}", "{revision}")

register(Figure("recovery", "swapkl.studies.heal.figures:plot_recovery", {"recovery": "results/recovery.parquet"},
                "global", "recovery", "the guides' delta PPL before and after healing", targets="heal",
                caption=str(STUDY.folder / "recovery.rst")))
