"""Rule aggregate_covariates: results/covariates.parquet and results/covariate_correlations.parquet."""

from swapkl.studies.covariate_stats import aggregate_covariates
from swapkl.joblog import job_log

with job_log(snakemake):
    aggregate_covariates(snakemake.input.covariates, snakemake.input.table, snakemake.output.table,
                         snakemake.output.correlations, n_boot=snakemake.params.n_boot, seed=snakemake.params.seed,
                         families=snakemake.params.families)
