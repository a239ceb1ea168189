"""Rule summarise_answer: results/answer/{model}.html (swapkl.tables.answer_page.write_answer_page)."""

from swapkl.joblog import job_log
from swapkl.tables.answer_page import write_answer_page

with job_log(snakemake):
    write_answer_page(snakemake.input.pruning, snakemake.input.get("decisions"), snakemake.wildcards.model,
                      list(zip(snakemake.input.figures, snakemake.params.captions)), snakemake.output[0],
                      sections=[(function, {table: snakemake.input[table] for table in tables})
                                for function, tables in snakemake.params.sections])
