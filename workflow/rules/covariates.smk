# What explains the protocol gap (exploratory): per-pair covariates of every checkpoint of a model with
# `covariates: true` (one engine job each, on the probe windows and pair set), joined with the aggregate's
# per-pair gaps, their rank correlations with the gaps, and one figure.


rule measure_covariates:
    input:
        unpack(get_probe_inputs),
    output:
        covariate_file("{model}", "{revision}"),
    params:
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/measure_covariates.log",
    benchmark:
        "benchmarks/{model}/{revision}/measure_covariates.tsv"
    threads: 1
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=4),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_covariates.py"


rule aggregate_covariates:
    input:
        covariates=[covariate_file(model, revision) for model, revision in covariate_checkpoints()],
        table="results/swapkl.parquet",
    output:
        table=report(
            "results/covariates.parquet",
            caption="../report/covariates_table.rst",
            category=section("tables"),
        ),
        correlations=report(
            "results/covariate_correlations.parquet",
            caption="../report/covariate_correlations_table.rst",
            category=section("tables"),
        ),
    params:
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        families=get_seed_families(),
    log:
        "logs/aggregate_covariates.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_covariates.py"
