"""Rule plot_ratio_by_distance: I/R ratio by pair distance, one figure per model (results/swapkl.parquet)."""

from swapkl.figures.ratio_figure import plot_ratio_by_distance
from swapkl.joblog import job_log

with job_log(snakemake):
    out, model = snakemake.output, snakemake.wildcards.model
    plot_ratio_by_distance(snakemake.input.table, out.png, out.pdf, model=model, gap="max")
    plot_ratio_by_distance(snakemake.input.table, out.png_fwd, out.pdf_fwd, model=model, gap="fwd")
