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
        **model_settings("dtype", "batch_size"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/measure_covariates.log",
    benchmark:
        "benchmarks/{model}/{revision}/measure_covariates.tsv"
    threads: 1
    resources:
        **engine_job(4, gpu=1),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_covariates.py"


rule aggregate_covariates:
    input:
        covariates=per_checkpoint(covariate_file, covariate_checkpoints()),
        table="results/swapkl.parquet",
    output:
        table=table_report("results/covariates.parquet", "covariates_table.rst"),
        correlations=table_report("results/covariate_correlations.parquet", "covariate_correlations_table.rst"),
    params:
        **BOOTSTRAP,
        families=get_seed_families(),
    log:
        "logs/aggregate_covariates.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_covariates.py"
