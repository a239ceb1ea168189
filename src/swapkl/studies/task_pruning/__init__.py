"""Task-calibrated pruning (the second paper's task-specific and task-agnostic pruning, and the Gromov curves), as
a study in one folder: one job per checkpoint chooses every method's blocks on each named calibration set (a
task's calibration split, a mix of all of them, or language-modelling windows) and evaluates every pruned model
on every task through lm-eval's own task definitions (docs/task_pruning.md).

Here: its declaration and the calibration sets of a model's section (below), its job (``jobs.py``), its run
(``run.py``: torch), its rules (``rules.smk``), its config section's schema (``schema.yaml``) and its two tables'
captions. The tables derived from the runs are :mod:`swapkl.relevance.task_tables`, its figures the family
:mod:`swapkl.figures.task_pruning`.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.relevance.relevance_jobs import DEMO_TASKS
from swapkl.studies.task_pruning.jobs import TaskPruningJob
from swapkl.study import Stage, Study, register_study, without_nulls

#: the demo tasks' training and test halves (rule split_demo_tasks), which `demo_tasks: true` evaluates
SPLIT_TASKS_DIR = "resources/demo/split_tasks"


def tasks_of(section: dict) -> list[str]:
    """The evaluation tasks of a model's `task_pruning` section: its `tasks`, then the demo's where asked."""
    return list(section["tasks"]) + (list(DEMO_TASKS) if section["demo_tasks"] else [])


def calibrations(model: str, section: dict) -> dict[str, dict]:
    """{calibration name: the job's calibration dict} of one model's `task_pruning` section: each task on its own
    (at most `max_calibration_docs` documents), each named mix and language-modelling set, and each curve task on
    itself; a name used twice is an error naming the model's section."""
    tasks = tasks_of(section)
    out: dict[str, dict] = {t: {"name": t, "tasks": [t], "max_docs": section["max_calibration_docs"]} for t in tasks}
    named = [(n, {"name": n, "tasks": tasks, **without_nulls(m)}) for n, m in sorted(section["mixes"].items())]
    named += [(n, {"name": n, "lm": without_nulls(s)}) for n, s in sorted(section["lm_calibrations"].items())]
    cap = section["max_curve_calibration_docs"] or section["max_calibration_docs"]
    named += [(t, {"name": t, "tasks": [t], "max_docs": cap, "curve": True}) for t in section["curve_tasks"]]
    for name, spec in named:
        if name in out:
            raise ConfigError(f"models.{model}.task_pruning: calibration name {name!r} is also a task or "
                              "another calibration")
        out[name] = spec
    return out


def check(model: str, entry: dict, models: dict) -> None:
    """The config checks of an enabled section: a task to evaluate, and distinct calibration names."""
    section = entry["task_pruning"]
    if not tasks_of(section):
        raise ConfigError(f"models.{model}.task_pruning: no task (set `tasks` or `demo_tasks`)")
    calibrations(model, section)


def _settings(params, wildcards) -> dict:
    section = params.model_config(wildcards)["task_pruning"]
    return dict(calibrations=list(calibrations(wildcards.model, section).values()), tasks=tasks_of(section),
                curve_tasks=list(section["curve_tasks"]), metadata=params.metadata(wildcards),
                include_path=SPLIT_TASKS_DIR if section["demo_tasks"] else None,
                include_defaults=not section["demo_tasks"])


def _inputs(params, wildcards) -> dict:
    """The checkpoint, and the demo's split tasks where the section evaluates them."""
    section = params.model_config(wildcards)["task_pruning"]
    split = [f"{SPLIT_TASKS_DIR}/{t}{ext}" for t in DEMO_TASKS for ext in (".yaml", "_train.jsonl", "_test.jsonl")]
    return {"checkpoint": params.checkpoint_input(wildcards), "tasks": split if section["demo_tasks"] else []}


def _files(wildcards, output) -> dict:
    return {"out": output.pruning}


STUDY = register_study(Study(
    name="task_pruning", folder=Path(__file__).parent,
    stage=Stage("task_pruning", TaskPruningJob, "swapkl.studies.task_pruning.run:run_task_pruning", "task_pruning",
                ("out",), _settings),
    summary="every method's blocks chosen on each task's, a mixed or a language-modelling calibration set, each "
            "pruned model evaluated on every task (the second paper's tables and Gromov curves)",
    outputs={"pruning": "results/task_pruning/{model}/{revision}.parquet"},
    tables={"seed003_pruning": "task_pruning_table.rst", "seed003_tables": "task_pruning_summary.rst"},
    rules={"prune_on_tasks": "checkpoint", "aggregate_task_pruning": "once"},
    inputs=_inputs, files=_files, figures="once", members=True, check=check,
    defaults=tuple((key, TaskPruningJob, key) for key in ("methods", "prune_fraction", "curve_methods",
                                                          "curve_budgets", "spacing", "score_pairs", "seq_len",
                                                          "seed")),
))
