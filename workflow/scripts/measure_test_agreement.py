"""Rule measure_test_agreement: rank agreement between every test of one checkpoint."""

from swapkl.joblog import job_log
from swapkl.probes.disagreement import run_test_agreement
from swapkl.probes.disagreement import DisagreementJob

with job_log(snakemake):
    run_test_agreement(DisagreementJob(probe_files=snakemake.input.probes, out=snakemake.output[0],
                                       repr_file=snakemake.input.representation,
                                       healed_file=snakemake.input.healed,
                                       relevance_file=snakemake.input.get("relevance"),
                                       members=snakemake.params.members, n_boot=snakemake.params.n_boot,
                                       seed=snakemake.params.seed, model=snakemake.wildcards.model,
                                       revision=snakemake.wildcards.revision))
