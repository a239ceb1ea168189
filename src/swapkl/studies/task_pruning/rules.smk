# Task-calibrated pruning, the rules of the study's folder (swapkl.studies.task_pruning): one engine job per
# checkpoint of a model with `task_pruning.enabled` (every calibration set in turn, the evaluation shared), one
# table (results/seed003_pruning.parquet) and the paper's tables derived from it (results/seed003_tables.parquet).


rule prune_on_tasks:
    input:
        unpack(STUDIES["task_pruning"].rule_inputs(PARAMS)),
    output:
        **STUDIES["task_pruning"].outputs,
    params:
        job=PARAMS.job("task_pruning"),
        files=STUDIES["task_pruning"].files,
    log:
        "logs/{model}/{revision}/prune_on_tasks.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_on_tasks.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_task_pruning:
    input:
        STUDIES["task_pruning"].per_checkpoint("pruning", PLAN.stage_checkpoints("task_pruning")),
    output:
        table=table_report("results/seed003_pruning.parquet", STUDIES["task_pruning"].caption("seed003_pruning")),
        summary=table_report("results/seed003_tables.parquet", STUDIES["task_pruning"].caption("seed003_tables")),
    log:
        "logs/aggregate_task_pruning.log",
    resources:
        **SUMMARY_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_task_pruning.py")
