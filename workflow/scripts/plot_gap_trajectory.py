"""Rule plot_gap_trajectory: per model, the gap of both replacement directions (max) and of one (fwd)."""

from swapkl.figures.trajectory import plot_gap_trajectory
from swapkl.joblog import job_log

with job_log(snakemake):
    out, model = snakemake.output, snakemake.wildcards.model
    plot_gap_trajectory(snakemake.input.table, out.png, out.pdf, model=model, gap="max")
    plot_gap_trajectory(snakemake.input.table, out.png_fwd, out.pdf_fwd, model=model, gap="fwd")
