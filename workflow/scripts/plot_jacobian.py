"""Rule plot_jacobian: ||J_k|| per block and against the blocks' swap distances."""

from swapkl.figures.scale import plot_jacobian
from swapkl.joblog import job_log

with job_log(snakemake):
    out = snakemake.output
    plot_jacobian(snakemake.input.jacobian, snakemake.input.table, out.png, out.pdf)
