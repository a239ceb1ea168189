"""Rule plot_seed_band: per seed family, the gap along training with its across-seed band."""

from swapkl.figures.seeds_figure import plot_seed_band
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_seed_band(snakemake.input.seeds, snakemake.output.png, snakemake.output.pdf,
                   family=snakemake.wildcards.family)
