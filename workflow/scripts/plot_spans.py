"""Rule plot_spans: KL against span width per variant for one checkpoint (results/spans.parquet)."""

from swapkl.figures.spans_figure import plot_spans
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_spans(snakemake.input.table, snakemake.output.png, snakemake.output.pdf,
               model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
