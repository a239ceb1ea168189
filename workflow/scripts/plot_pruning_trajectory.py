"""Rule plot_pruning_trajectory: I/R pruning ratio vs training step of one model, one line per budget."""

from swapkl.figures.pruning_figure import plot_ir_trajectory
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_ir_trajectory(snakemake.input.table, snakemake.wildcards.model, snakemake.output.png, snakemake.output.pdf,
                       n_boot=snakemake.params.n_boot, seed=snakemake.params.seed)
