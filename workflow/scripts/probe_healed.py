"""Rule probe_healed: heal the selected variants of one checkpoint toward the base model, KL after each."""

from swapkl.joblog import job_log
from swapkl.recovery.healed_jobs import HealedProbeJob

with job_log(snakemake):
    h = snakemake.params.healed
    HealedProbeJob(model=snakemake.params.checkpoint, probe_files=snakemake.input.probes, out=snakemake.output[0],
                   data=snakemake.params.data, calibration=h["calibration"], settings=h["settings"],
                   protocols=h["protocols"], selection=h["selection"], k=h["k"], select_seed=h["seed"],
                   curve_steps=h["curve_steps"], label=snakemake.wildcards.model,
                   revision_label=snakemake.wildcards.revision, dtype=snakemake.params.dtype,
                   batch_size=snakemake.params.batch_size).run()
