# What explains the protocol gap (exploratory): per-pair covariates of every checkpoint of a model with
# `covariates: true` (measured by the checkpoint's probe job, on its windows, pair set and load: rule
# probe_checkpoint_with_covariates, probe.smk), joined with the aggregate's per-pair gaps, their rank correlations
# with the gaps, and one figure.


rule aggregate_covariates:
    input:
        covariates=per_checkpoint(covariate_file, PLAN.covariate_checkpoints()),
        table="results/swapkl.parquet",
    output:
        table=table_report("results/covariates.parquet", "covariates_table.rst"),
        correlations=table_report("results/covariate_correlations.parquet", "covariate_correlations_table.rst"),
    params:
        **BOOTSTRAP,
        families=PLAN.seed_families(),
    log:
        "logs/aggregate_covariates.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_covariates.py"
