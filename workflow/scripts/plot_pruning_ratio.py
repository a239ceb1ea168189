"""Rule plot_pruning_ratio: I/R pruning ratio vs budget, one line per pruned model."""

from swapkl.figures.pruning_figure import plot_ir_panel
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_ir_panel(snakemake.input.table, snakemake.output.png, snakemake.output.pdf, n_boot=snakemake.params.n_boot,
                  seed=snakemake.params.seed)
