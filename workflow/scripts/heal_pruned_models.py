"""Rule heal_pruned_models: heal each exported pruned model and the unpruned control, score them all."""

from swapkl.data.data_spec import DataSpec
from swapkl.recovery.heal_settings import TrainText, settings_from
from swapkl.joblog import job_log
from swapkl.recovery.recovery_table import export_folders, run_recovery

with job_log(snakemake):
    run_recovery(snakemake.params.checkpoint, export_folders(snakemake.input.exports), snakemake.output.table,
                 snakemake.output.healed, settings_from(**snakemake.params.settings),
                 TrainText(**snakemake.params.train), snakemake.params.eval, probe_data=DataSpec(**snakemake.params.data),
                 task_files=list(snakemake.input.tasks),
                 model_name=snakemake.wildcards.model, revision_label=snakemake.wildcards.revision,
                 budgets=snakemake.params.budgets, dtype=snakemake.params.dtype,
                 batch_size=snakemake.params.batch_size)
