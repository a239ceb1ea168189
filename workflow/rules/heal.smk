# Recovery after pruning: every exported pruned model and the unpruned control get the same short heal
# (swapkl.recovery.heal), then perplexity and KL to the base model are measured before and after.


rule heal_pruned_models:
    input:
        unpack(PARAMS.heal_inputs),
    output:
        table=recovery_file("{model}", "{revision}"),
        healed=directory("results/healed_models/{model}/{revision}"),
    params:
        job=PARAMS.job("heal"),
        files=lambda wildcards, input, output: {"exports_dir": input.exports, "out": output.table,
                                                "healed_dir": output.healed, "task_files": list(input.tasks)},
    log:
        "logs/{model}/{revision}/heal_pruned_models.log",
    threads: 1
    resources:
        **engine_job(30, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_recovery:
    input:
        per_checkpoint(recovery_file, PLAN.heal_checkpoints()),
    output:
        table_report("results/recovery.parquet", "recovery_table.rst"),
    log:
        "logs/aggregate_recovery.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/combine_tables.py"
