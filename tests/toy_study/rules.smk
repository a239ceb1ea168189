# The toy study's rules (tests/toy_study): one job per checkpoint of a model with `toy_study.enabled`, and one
# gathering them into a results table that the report shows.


rule score_toy:
    input:
        unpack(STUDIES["toy_study"].rule_inputs(PARAMS)),
    output:
        **STUDIES["toy_study"].outputs,
    params:
        job=PARAMS.job("toy_study"),
        files=STUDIES["toy_study"].files,
    log:
        "logs/{model}/{revision}/score_toy.log",
    script:
        workflow_script("run_job.py")


rule aggregate_toy:
    input:
        STUDIES["toy_study"].per_checkpoint("scores", PLAN.stage_checkpoints("toy_study")),
    output:
        table_report("results/toy_scores.parquet", STUDIES["toy_study"].caption("toy_scores")),
    log:
        "logs/aggregate_toy.log",
    shell:
        "touch {output}"
