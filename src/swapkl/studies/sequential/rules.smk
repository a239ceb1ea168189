# Sequential probing to a stated confidence (docs/sequential.md), the rules of the study's folder
# (swapkl.studies.sequential): for every checkpoint of a model with `sequential.enabled`, one engine job walks the
# pool of windows in looks, measuring each variant only while a decision it takes part in is open, and writes its
# probe table and its decisions table; the decisions of every checkpoint are gathered into
# results/decisions.parquet. Its resume file is a log, so a killed job resumes.


rule probe_sequential:
    input:
        unpack(STUDIES["sequential"].rule_inputs(PARAMS)),
    output:
        **STUDIES["sequential"].outputs,
    params:
        job=PARAMS.job("sequential"),
        files=STUDIES["sequential"].files,
    log:
        "logs/{model}/{revision}/probe_sequential.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_sequential.tsv"
    threads: 4
    resources:
        **engine_job(4, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_decisions:
    input:
        STUDIES["sequential"].per_checkpoint("decisions", PLAN.stage_checkpoints("sequential")),
    output:
        table_report("results/decisions.parquet", STUDIES["sequential"].caption("decisions")),
    log:
        "logs/aggregate_decisions.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_decisions.py")
