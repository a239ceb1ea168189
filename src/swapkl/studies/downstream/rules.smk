# Downstream benchmarks (the paper's section "Downstream Task Benchmarks"), the rules of the study's folder
# (swapkl.studies.downstream): per scored checkpoint one engine job scores the tasks on the base model, the
# pruning guides' pruned models (engine variants) and the healed models of the recovery stage (loaded); the
# checkpoints' tables are gathered into results/downstream.parquet. Its figure (one per checkpoint) is the folder's
# (figures.py; its plot rule is made by workflow/rules/figures.smk from the figure registry).


rule score_downstream:
    input:
        unpack(STUDIES["downstream"].rule_inputs(PARAMS)),
    output:
        **STUDIES["downstream"].outputs,
    params:
        job=PARAMS.job("downstream"),
        files=STUDIES["downstream"].files,
    log:
        "logs/{model}/{revision}/score_downstream.log",
    benchmark:
        "benchmarks/{model}/{revision}/score_downstream.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_downstream:
    input:
        STUDIES["downstream"].per_checkpoint("downstream", PLAN.stage_checkpoints("downstream")),
    output:
        table_report("results/downstream.parquet", STUDIES["downstream"].caption("downstream")),
    log:
        "logs/aggregate_downstream.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_downstream.py")
