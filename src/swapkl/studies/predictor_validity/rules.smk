# Predictor validity, the rules of the study's folder (swapkl.studies.predictor_validity): one engine job per
# checkpoint of a model with `predictor_validity.enabled` (by default its last revision) removes each block alone
# on the prune.eval text and correlates the costs with the aggregate's pair scores; gathered into
# results/predictor_validity.parquet.


rule measure_predictor_validity:
    input:
        unpack(STUDIES["predictor_validity"].rule_inputs(PARAMS)),
    output:
        **STUDIES["predictor_validity"].outputs,
    params:
        job=PARAMS.job("predictor_validity"),
        files=STUDIES["predictor_validity"].files,
    log:
        "logs/{model}/{revision}/measure_predictor_validity.log",
    threads: 4
    resources:
        **engine_job(5, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule combine_predictor_validity:
    input:
        STUDIES["predictor_validity"].per_checkpoint("validity", PLAN.stage_checkpoints("predictor_validity")),
    output:
        table_report("results/predictor_validity.parquet", STUDIES["predictor_validity"].caption("predictor_validity")),
    log:
        "logs/combine_predictor_validity.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("combine_tables.py")
