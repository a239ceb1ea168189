"""Which task-calibrated pruning jobs the workflow runs (``task_pruning`` of a model; pure: no torch).

One job per (model, revision), over every calibration set: each task of ``task_pruning.tasks`` (or the demo's split tasks)
calibrates on its own calibration split; each named mix (``mixes``) and language-modelling set
(``lm_calibrations``) is a calibration set too. Every job evaluates on every task. Each of ``curve_tasks``
(GSM8K: generative) only draws Gromov curves: it calibrates on itself (at most ``max_curve_calibration_docs``
documents, else ``max_calibration_docs``) and is evaluated on its own pruned models alone.
"""

from __future__ import annotations

from swapkl.config import ConfigError
from swapkl.config.checks import DEMO_TASKS
from swapkl.config.input_stamps import with_stamps
from swapkl.config.job_settings import without_nulls
from swapkl.config.layout import DEMO_DIR

#: the demo tasks with a training and a test half (rule split_demo_tasks)
SPLIT_TASKS_DIR = f"{DEMO_DIR}/split_tasks"
TABLE = "results/seed003_pruning.parquet"
SUMMARY = "results/seed003_tables.parquet"


def task_pruning_file(model: str, revision: str) -> str:
    return f"results/task_pruning/{model}/{revision}.parquet"


def tasks_of(block: dict) -> list[str]:
    return list(block["tasks"]) + (list(DEMO_TASKS) if block["demo_tasks"] else [])


def calibrations(model: str, block: dict) -> dict[str, dict]:
    """{calibration name: the job's `calibration` argument} of one model's task_pruning block."""
    tasks = tasks_of(block)
    out: dict[str, dict] = {t: {"name": t, "tasks": [t], "max_docs": block["max_calibration_docs"]} for t in tasks}
    named = [(n, {"name": n, "tasks": tasks, **without_nulls(m)}) for n, m in sorted(block["mixes"].items())]
    named += [(n, {"name": n, "lm": without_nulls(s)}) for n, s in sorted(block["lm_calibrations"].items())]
    cap = block["max_curve_calibration_docs"] or block["max_calibration_docs"]
    named += [(t, {"name": t, "tasks": [t], "max_docs": cap, "curve": True}) for t in block["curve_tasks"]]
    for name, spec in named:
        if name in out:
            raise ConfigError(f"models.{model}.task_pruning: calibration name {name!r} is also a task or "
                              "another calibration")
        out[name] = spec
    return out


def task_pruning_jobs(plan) -> list[tuple[str, str]]:
    """Every (model, revision) of the enabled models' task_pruning blocks (their calibration names checked)."""
    jobs = []
    for model in plan.enabled_models():
        block = plan.models[model]["task_pruning"]
        if not block["enabled"]:
            continue
        if not tasks_of(block):
            raise ConfigError(f"models.{model}.task_pruning: no task (set `tasks` or `demo_tasks`)")
        revisions = plan.revisions(model) if block["revisions"] == "all" else block["revisions"]
        calibrations(model, block)
        jobs += [(model, r) for r in revisions]
    return jobs


def job_params(plan, model: str) -> dict:
    """Keyword arguments of :func:`swapkl.relevance.task_pruning.run_task_pruning` from the config."""
    block = plan.models[model]["task_pruning"]
    return dict(calibrations=list(calibrations(model, block).values()), tasks=tasks_of(block),
                curve_tasks=list(block["curve_tasks"]),
                methods=list(block["methods"]), prune_fraction=block["prune_fraction"],
                curve_methods=list(block["curve_methods"]), curve_budgets=list(block["curve_budgets"]),
                spacing=block["spacing"], score_pairs=block["score_pairs"], seq_len=block["seq_len"],
                seed=block["seed"], include_path=SPLIT_TASKS_DIR if block["demo_tasks"] else None,
                include_defaults=not block["demo_tasks"])


def job_inputs(plan, model: str, revision: str) -> dict:
    block = plan.models[model]["task_pruning"]
    split = [f"{SPLIT_TASKS_DIR}/{t}{ext}" for t in DEMO_TASKS for ext in (".yaml", "_train.jsonl", "_test.jsonl")] \
        if block["demo_tasks"] else []
    return {"checkpoint": with_stamps(plan.checkpoint_input(model, revision)), "tasks": split}
