"""Rule summarise_seeds: results/seeds.parquet (the gap, pair ranking and pruning choice across seeds)."""

from swapkl.joblog import job_log
from swapkl.studies.seeds import write_seed_statistics

with job_log(snakemake):
    write_seed_statistics(snakemake.input.table, snakemake.output[0], families=snakemake.params.families,
                          pruning_path=snakemake.input.get("pruning"))
