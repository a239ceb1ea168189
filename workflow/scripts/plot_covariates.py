"""Rule plot_covariates: Spearman correlation of each covariate with the protocol gap, with bootstrap CIs."""

from swapkl.figures.covariates_figure import plot_covariate_correlations
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_covariate_correlations(snakemake.input.correlations, snakemake.output.png, snakemake.output.pdf,
                                families=snakemake.params.families)
