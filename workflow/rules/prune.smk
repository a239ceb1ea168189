# Layer pruning guided by the probe scores and by the baselines: one GPU job per pruned checkpoint, then
# one pruning table and one guide-agreement table over every pruned checkpoint; the pruning table's bootstrap
# CIs are computed there (probe.n_boot resamples, each checkpoint's prune.seed), not in the GPU jobs.


rule prune_layers:
    input:
        unpack(get_prune_inputs),
    output:
        pruning="results/pruning/{model}/{revision}/pruning.parquet",
        agreement="results/pruning/{model}/{revision}/agreement.parquet",
    params:
        checkpoint=get_checkpoint_dir,
        budgets=lambda wildcards: list(range(1, config["models"][wildcards.model]["prune"]["max_budget"] + 1)),
        spacing=lambda wildcards: config["models"][wildcards.model]["prune"]["spacing"],
        eval_data=lambda wildcards: without_nulls(config["models"][wildcards.model]["prune"]["eval"]),
        calib_data=lambda wildcards: without_nulls(config["models"][wildcards.model]["prune"]["calibration"]),
        n_random=lambda wildcards: config["models"][wildcards.model]["prune"]["n_random"],
        selection=get_selection_options,
        angular_metric=lambda wildcards: config["models"][wildcards.model]["prune"]["angular_metric"],
        allow_overlap=lambda wildcards: config["models"][wildcards.model]["prune"]["allow_overlap"],
        seed=lambda wildcards: config["models"][wildcards.model]["prune"]["seed"],
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        compute_dtype=lambda wildcards: config["models"][wildcards.model]["prune"]["compute_dtype"],
        rope_scaling=lambda wildcards: config["models"][wildcards.model]["rope_scaling"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        metadata=get_prune_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/prune_layers.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_layers.tsv"
    threads: 4
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=20),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prune_layers.py"


rule aggregate_pruning:
    input:
        pruning=[pruning_file(model, revision) for model, revision in prune_checkpoints()],
        agreement=[agreement_file(model, revision) for model, revision in prune_checkpoints()],
    output:
        pruning=report(
            "results/pruning.parquet",
            caption="../report/pruning_table.rst",
            category=section("tables"),
        ),
        agreement=report(
            "results/pruning_agreement.parquet",
            caption="../report/pruning_agreement_table.rst",
            category=section("tables"),
        ),
    params:
        n_boot=config["probe"]["n_boot"],
    log:
        "logs/aggregate_pruning.log",
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_pruning.py"
