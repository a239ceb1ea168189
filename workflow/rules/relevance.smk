# Accuracy-based layer relevance (AccRel): demo tasks from the demo corpus, one engine job per scored
# checkpoint (base model + every single-block deletion, and each pruning guide's pruned models where the
# checkpoint is pruned too), one table, and its figures.


rule build_demo_tasks:
    input:
        DEMO_CORPUS,
    output:
        expand("resources/demo/tasks/{task}.{ext}", task=DEMO_TASKS, ext=("yaml", "jsonl")),
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input[0]),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/demo/build_demo_tasks.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/build_demo_tasks.py"


# the demo tasks' training and test halves, which the task-calibrated pruning calibrates and evaluates on
# (swapkl.studies.task_pruning, `demo_tasks: true`)
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


rule score_relevance:
    input:
        unpack(PARAMS.relevance_inputs),
    output:
        "results/relevance/{model}/{revision}.parquet",
    params:
        job=PARAMS.job("relevance"),
        files=lambda wildcards, input, output: {"out": output[0], "pruning": input.get("pruning")},
    log:
        "logs/{model}/{revision}/score_relevance.log",
    benchmark:
        "benchmarks/{model}/{revision}/score_relevance.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_relevance:
    input:
        per_checkpoint(relevance_file, PLAN.stage_checkpoints("relevance")),
    output:
        table_report("results/relevance.parquet", "relevance_table.rst"),
    log:
        "logs/aggregate_relevance.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_relevance.py"


rule summarise_relevance:
    input:
        relevance="results/relevance.parquet",
        table="results/swapkl.parquet",
    output:
        table_report("results/relevance_stats.parquet", "relevance_stats.rst"),
    log:
        "logs/summarise_relevance.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_relevance.py"
