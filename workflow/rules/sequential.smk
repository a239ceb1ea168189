# Sequential probing to a stated confidence (docs/sequential.md): for every checkpoint of a model with
# `sequential.enabled`, one engine job walks the pool of windows in looks, measuring each variant only while a
# decision it takes part in is open, and writes its probe table and its decisions table; the decisions of every
# checkpoint are gathered into results/decisions.parquet. Its resume file is a log, so a killed job resumes.


rule probe_sequential:
    input:
        unpack(PARAMS.sequential_inputs),
    output:
        probe=sequential_file("{model}", "{revision}"),
        decisions=decisions_file("{model}", "{revision}"),
    params:
        job=PARAMS.job("sequential"),
        files=PARAMS.sequential_files,
    log:
        "logs/{model}/{revision}/probe_sequential.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_sequential.tsv"
    threads: 4
    resources:
        **engine_job(4, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_decisions:
    input:
        per_checkpoint(decisions_file, PLAN.stage_checkpoints("sequential")),
    output:
        table_report("results/decisions.parquet", "decisions_table.rst"),
    log:
        "logs/aggregate_decisions.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_decisions.py"
