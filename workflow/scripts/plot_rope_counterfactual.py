"""Rule plot_rope_counterfactual: per-pair I/R ratio with rotary embeddings on and off."""

from swapkl.figures.scale import plot_rope_counterfactual
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_rope_counterfactual(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
