# The protocol gap inside the block (swapkl.studies.sublayers, docs/engine.md), the rules of the study's folder:
# for every checkpoint of a model with `sublayers.enabled`, one engine job measures block, attention and MLP
# replacement and interchange of every pair and the sublayer deletions, and writes the decomposition (with
# `budgets`, also the sublayer and block removal sets' perplexity); the checkpoints' tables are gathered into
# results/sublayer_gaps.parquet and results/sublayer_pruning.parquet.


rule probe_sublayers:
    input:
        unpack(STUDIES["sublayers"].rule_inputs(PARAMS)),
    output:
        **STUDIES["sublayers"].outputs,
    params:
        job=PARAMS.job("sublayers"),
        files=STUDIES["sublayers"].files,
    log:
        "logs/{model}/{revision}/probe_sublayers.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_sublayers.tsv"
    threads: 4
    resources:
        **engine_job(30, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_sublayers:
    input:
        STUDIES["sublayers"].per_checkpoint("gaps", PLAN.stage_checkpoints("sublayers")),
    output:
        table_report("results/sublayer_gaps.parquet", STUDIES["sublayers"].caption("sublayer_gaps")),
    log:
        "logs/aggregate_sublayers.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_sublayers.py")


rule aggregate_sublayer_pruning:
    input:
        STUDIES["sublayers"].per_checkpoint("pruning", PLAN.stage_checkpoints("sublayers")),
    output:
        table_report("results/sublayer_pruning.parquet", STUDIES["sublayers"].caption("sublayer_pruning")),
    log:
        "logs/aggregate_sublayer_pruning.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_sublayer_pruning.py")
