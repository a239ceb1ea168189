# Accuracy-based layer relevance (the second paper's AccRel), the rules of the study's folder
# (swapkl.studies.relevance): per scored checkpoint one engine job scores every single-block deletion (and, where
# the checkpoint is pruned too, the guides' pruned models) on the tasks and language-modelling windows; the
# checkpoints' tables are gathered into results/relevance.parquet and summarised against cosine similarity (BI)
# in results/relevance_stats.parquet. Its figures (per checkpoint) are the family swapkl.figures.relevance.


rule score_relevance:
    input:
        unpack(STUDIES["relevance"].rule_inputs(PARAMS)),
    output:
        **STUDIES["relevance"].outputs,
    params:
        job=PARAMS.job("relevance"),
        files=STUDIES["relevance"].files,
    log:
        "logs/{model}/{revision}/score_relevance.log",
    benchmark:
        "benchmarks/{model}/{revision}/score_relevance.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_relevance:
    input:
        STUDIES["relevance"].per_checkpoint("relevance", PLAN.stage_checkpoints("relevance")),
    output:
        table_report("results/relevance.parquet", STUDIES["relevance"].caption("relevance")),
    log:
        "logs/aggregate_relevance.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_relevance.py")


rule summarise_relevance:
    input:
        relevance="results/relevance.parquet",
        table="results/swapkl.parquet",
    output:
        table_report("results/relevance_stats.parquet", STUDIES["relevance"].caption("relevance_stats")),
    log:
        "logs/summarise_relevance.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_relevance.py")
