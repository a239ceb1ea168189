"""Rule fetch_paper_inputs: the paper's prompt lists as JSON Lines (output keys are the lists' names)."""

from swapkl.joblog import job_log
from swapkl.paper.prompt_lists import fetch_paper_inputs

with job_log(snakemake):
    fetch_paper_inputs(dict(snakemake.output.items()), snakemake.params.repo)
