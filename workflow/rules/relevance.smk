# Accuracy-based layer relevance (AccRel): demo tasks from the demo corpus, one engine job per scored
# checkpoint (base model + every single-block deletion, and each pruning guide's pruned models where the
# checkpoint is pruned too), one table, and its figures.


rule build_demo_tasks:
    input:
        expand("resources/demo/corpus/{name}", name=DEMO_CORPUS_FILES),
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


rule score_relevance:
    input:
        unpack(get_relevance_inputs),
    output:
        "results/relevance/{model}/{revision}.parquet",
    params:
        checkpoint=get_checkpoint_dir,
        tasks=get_relevance_tasks,
        lm=get_relevance_lm,
        lm_sets=get_relevance_lm_sets,
        lm_eval_tasks=get_relevance_lm_eval_tasks,
        pruning_guides=get_relevance_pruning_guides,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        placement=get_placement,
    log:
        "logs/{model}/{revision}/score_relevance.log",
    benchmark:
        "benchmarks/{model}/{revision}/score_relevance.tsv"
    threads: 1
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=20),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/score_relevance.py"


rule aggregate_relevance:
    input:
        [relevance_file(model, revision) for model, revision in relevance_checkpoints()],
    output:
        report(
            "results/relevance.parquet",
            caption="../report/relevance_table.rst",
            category=section("tables"),
        ),
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
        report(
            "results/relevance_stats.parquet",
            caption="../report/relevance_stats.rst",
            category=section("tables"),
        ),
    log:
        "logs/summarise_relevance.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_relevance.py"
