# Checkpoints a user can load: the pruned model each configured guide chose at each budget, written by
# swapkl export (reloaded and checked against the engine before it appears).


rule export_pruned_models:
    input:
        unpack(PARAMS.export_inputs),
    output:
        directory("results/exports/{model}/{revision}"),
    params:
        checkpoint=PARAMS.checkpoint_dir,
        **model_settings("export_guides", section="prune"),
        **model_settings("dtype"),
    log:
        "logs/{model}/{revision}/export_pruned_models.log",
    threads: 1
    resources:
        **engine_job(5, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/export_pruned_models.py"
