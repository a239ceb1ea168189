"""Rule render_table: one results table as an HTML page for the report."""

import swapkl.studies  # noqa: F401  (the studies kept in folders declare their tables' columns)
from swapkl.joblog import job_log
from swapkl.tables.table_html import write_table_html

with job_log(snakemake):
    write_table_html(snakemake.input.table, snakemake.output[0], title=f"results/{snakemake.wildcards.table}.parquet",
                     table=snakemake.wildcards.table)
