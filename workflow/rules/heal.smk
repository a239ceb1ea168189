# Recovery after pruning: every exported pruned model and the unpruned control get the same short heal
# (swapkl.recovery.heal), then perplexity and KL to the base model are measured before and after.


rule heal_pruned_models:
    input:
        unpack(PARAMS.export_inputs),
        exports="results/exports/{model}/{revision}",
        text=lambda wildcards: text_files(config["models"][wildcards.model]["heal"]["train"],
                                          config["models"][wildcards.model]["prune"]["eval"]),
        tasks=lambda wildcards: PARAMS.relevance_tasks(wildcards)
        if config["models"][wildcards.model]["relevance"]["enabled"] else [],
    output:
        table=recovery_file("{model}", "{revision}"),
        healed=directory("results/healed_models/{model}/{revision}"),
    params:
        checkpoint=PARAMS.checkpoint_dir,
        settings=lambda wildcards: config["models"][wildcards.model]["heal"]["settings"],
        budgets=lambda wildcards: config["models"][wildcards.model]["heal"]["budgets"],
        train=lambda wildcards: without_nulls(config["models"][wildcards.model]["heal"]["train"]),
        eval=lambda wildcards: without_nulls(config["models"][wildcards.model]["prune"]["eval"]),
        data=PARAMS.probe_data,
        **model_settings("dtype", "batch_size"),
    log:
        "logs/{model}/{revision}/heal_pruned_models.log",
    threads: 1
    resources:
        **engine_job(30, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/heal_pruned_models.py"


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
