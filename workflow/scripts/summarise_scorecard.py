"""Rule summarise_scorecard: results/paper_scorecard.parquet (and its HTML table) from the result tables that exist."""

from swapkl.joblog import job_log
from swapkl.paper.scorecard import write_scorecard

with job_log(snakemake):
    write_scorecard(snakemake.output.table, html_out=snakemake.output.html, **dict(snakemake.input.items()))
