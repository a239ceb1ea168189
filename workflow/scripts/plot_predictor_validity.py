"""Rule plot_predictor_validity: pair score against the cheaper block's removal cost."""

from swapkl.figures.scale import plot_predictor_validity
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_predictor_validity(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
