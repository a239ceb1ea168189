"""Rule summarise_pe_ablation: results/pe_ablation.parquet, the I/R ratio by pair distance per encoding and depth."""

from swapkl.joblog import job_log
from swapkl.studies.pe_ablation.summary import build_pe_ablation

with job_log(snakemake):
    build_pe_ablation(dict(snakemake.params.models), snakemake.output[0], max_distance=snakemake.params.max_distance)
