# Task-calibrated pruning (the second paper's task-specific and task-agnostic pruning, and the Gromov curves):
# one engine job per checkpoint and calibration set, one table (results/seed003_pruning.parquet) and the
# tables derived from it (results/seed003_tables.parquet); the jobs and their arguments come from
# swapkl.config.task_pruning_plan.

from swapkl.config.task_pruning_plan import (SPLIT_TASKS_DIR, SUMMARY as TASK_PRUNING_SUMMARY,
                                             TABLE as TASK_PRUNING_TABLE, job_inputs as task_pruning_inputs,
                                             job_params as task_pruning_params, task_pruning_file,
                                             task_pruning_jobs)


rule split_demo_tasks:
    input:
        f"{DEMO_DIR}/tasks/{{task}}.yaml",
        f"{DEMO_DIR}/tasks/{{task}}.jsonl",
    output:
        f"{SPLIT_TASKS_DIR}/{{task}}.yaml",
        f"{SPLIT_TASKS_DIR}/{{task}}_train.jsonl",
        f"{SPLIT_TASKS_DIR}/{{task}}_test.jsonl",
    log:
        "logs/demo/split_demo_tasks_{task}.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/split_demo_tasks.py"


rule prune_on_tasks:
    input:
        unpack(lambda wildcards: task_pruning_inputs(PLAN, wildcards.model, wildcards.revision)),
    output:
        "results/task_pruning/{model}/{revision}/{calibration}.parquet",
    params:
        checkpoint=get_checkpoint_dir,
        job=lambda wildcards: task_pruning_params(PLAN, wildcards.model, wildcards.calibration),
        **model_settings("dtype", "batch_size"),
        placement=get_placement,
    log:
        "logs/{model}/{revision}/prune_on_tasks_{calibration}.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_on_tasks_{calibration}.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prune_on_tasks.py"


rule aggregate_task_pruning:
    input:
        [task_pruning_file(m, r, c) for m, r, c in task_pruning_jobs(PLAN)],
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
