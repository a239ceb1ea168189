"""Rule plot_third_test: the disagreement map and the healed variants' recovery curves of one checkpoint."""

from swapkl.figures.test_agreement import plot_healed_curves, plot_test_agreement
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_test_agreement(snakemake.input.agreement, snakemake.output.png, snakemake.output.pdf)
    plot_healed_curves(snakemake.input.healed, snakemake.output.curves_png, snakemake.output.curves_pdf)
