# Recovery after pruning (swapkl.studies.heal), the rules of the study's folder: every exported pruned model and
# the unpruned control get the same short heal (swapkl.recovery.heal), then perplexity and KL to the base model
# are measured before and after; gathered into results/recovery.parquet.

from swapkl.studies.heal import HEALED_MODELS


rule heal_pruned_models:
    input:
        unpack(STUDIES["heal"].rule_inputs(PARAMS)),
    output:
        recovery=STUDIES["heal"].outputs["recovery"],
        healed=directory(HEALED_MODELS),
    params:
        job=PARAMS.job("heal"),
        files=STUDIES["heal"].files,
    log:
        "logs/{model}/{revision}/heal_pruned_models.log",
    threads: 1
    resources:
        **engine_job(30, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_recovery:
    input:
        STUDIES["heal"].per_checkpoint("recovery", PLAN.stage_checkpoints("heal")),
    output:
        table_report("results/recovery.parquet", STUDIES["heal"].caption("recovery")),
    log:
        "logs/aggregate_recovery.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("combine_tables.py")
