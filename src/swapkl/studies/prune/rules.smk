# Layer pruning (swapkl.studies.prune), the rules of the study's folder: one GPU job per pruned checkpoint, guided
# by the probe scores and by the baselines, then one pruning table and one guide-agreement table over every
# pruned checkpoint; the pruning table's bootstrap CIs are computed there (probe.n_boot resamples, each
# checkpoint's prune.seed), not in the GPU jobs; and the export of the guides' pruned models.

from swapkl.layout import export_dir


rule prune_layers:
    input:
        unpack(STUDIES["prune"].rule_inputs(PARAMS)),
    output:
        pruning=STUDIES["prune"].outputs["pruning"],
        agreement=STUDIES["prune"].outputs["agreement"],
    params:
        job=PARAMS.job("prune"),
        files=STUDIES["prune"].files,
    log:
        "logs/{model}/{revision}/prune_layers.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_layers.tsv"
    threads: 4
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_pruning:
    input:
        pruning=STUDIES["prune"].per_checkpoint("pruning", PLAN.stage_checkpoints("prune")),
        agreement=STUDIES["prune"].per_checkpoint("agreement", PLAN.stage_checkpoints("prune")),
    output:
        pruning=table_report("results/pruning.parquet", STUDIES["prune"].caption("pruning")),
        agreement=table_report("results/pruning_agreement.parquet", STUDIES["prune"].caption("pruning_agreement")),
    params:
        n_boot=BOOTSTRAP["n_boot"],
    log:
        "logs/aggregate_pruning.log",
    resources:
        **SUMMARY_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_pruning.py")


# Checkpoints a user can load: the pruned model each guide of `export_guides` chose at each budget, written by
# swapkl export (reloaded and checked against the engine before it appears); on the checkpoints whose section
# names such guides (the declaration's only_with).
rule export_pruned_models:
    input:
        unpack(PARAMS.export_inputs),
    output:
        directory(export_dir("{model}", "{revision}")),
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
        workflow_env("torch.yaml")
    script:
        workflow_script("export_pruned_models.py")
