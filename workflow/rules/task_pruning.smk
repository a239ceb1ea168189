# Task-calibrated pruning (the second paper's task-specific and task-agnostic pruning, and the Gromov curves):
# one engine job per checkpoint (every calibration set in turn, the evaluation shared), one table (results/seed003_pruning.parquet) and the
# tables derived from it (results/seed003_tables.parquet); the jobs and their arguments come from
# swapkl.config.task_pruning_plan.

from swapkl.config.task_pruning_plan import (SPLIT_TASKS_DIR, SUMMARY as TASK_PRUNING_SUMMARY,
                                             TABLE as TASK_PRUNING_TABLE, job_inputs as task_pruning_inputs,
                                             job_params as task_pruning_params, task_pruning_file,
                                             task_pruning_jobs)


rule split_demo_tasks:
    input:
        expand(f"{DEMO_DIR}/tasks/{{task}}.{{ext}}", task=DEMO_TASKS, ext=("yaml", "jsonl")),
    output:
        expand(f"{SPLIT_TASKS_DIR}/{{task}}{{ext}}", task=DEMO_TASKS, ext=(".yaml", "_train.jsonl", "_test.jsonl")),
    log:
        "logs/demo/split_demo_tasks.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/split_demo_tasks.py"


rule prune_on_tasks:
    input:
        unpack(lambda wildcards: task_pruning_inputs(PLAN, wildcards.model, wildcards.revision)),
    output:
        "results/task_pruning/{model}/{revision}.parquet",
    params:
        checkpoint=PARAMS.checkpoint_dir,
        job=lambda wildcards: task_pruning_params(PLAN, wildcards.model),
        **model_settings("dtype", "batch_size"),
        placement=PARAMS.placement,
    log:
        "logs/{model}/{revision}/prune_on_tasks.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_on_tasks.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prune_on_tasks.py"


rule aggregate_task_pruning:
    input:
        [task_pruning_file(m, r) for m, r in task_pruning_jobs(PLAN)],
    output:
        table=table_report(TASK_PRUNING_TABLE, "task_pruning_table.rst"),
        summary=table_report(TASK_PRUNING_SUMMARY, "task_pruning_summary.rst"),
    log:
        "logs/aggregate_task_pruning.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_task_pruning.py"
