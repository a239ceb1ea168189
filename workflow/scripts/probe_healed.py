"""Rule probe_healed: heal the selected variants of one checkpoint toward the base model, KL after each."""

from swapkl.data.windows import DataSpec
from swapkl.recovery.heal import TrainText, settings_from
from swapkl.probes.healed import run_healed_probe
from swapkl.joblog import job_log

with job_log(snakemake):
    h = snakemake.params.healed
    run_healed_probe(snakemake.params.checkpoint, list(snakemake.input.probes), snakemake.output[0],
                     data=DataSpec(**snakemake.params.data), calibration=TrainText(**h["calibration"]),
                     settings=settings_from(**h["settings"]), protocols=tuple(h["protocols"]),
                     selection=h["selection"], k=h["k"], select_seed=h["seed"], curve_steps=h["curve_steps"],
                     label=snakemake.wildcards.model, revision_label=snakemake.wildcards.revision,
                     dtype=snakemake.params.dtype, batch_size=snakemake.params.batch_size)
