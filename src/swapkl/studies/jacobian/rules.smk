# Residual Jacobian spectral norms ||J_k||_2 per block, the rules of the study's folder (swapkl.studies.jacobian):
# one engine job per checkpoint of a model with `jacobian.enabled` (by default its last revision), gathered into
# results/jacobian.parquet. Its figure (one in all) draws the norms against the blocks' swap distances.


rule measure_jacobian:
    input:
        unpack(STUDIES["jacobian"].rule_inputs(PARAMS)),
    output:
        **STUDIES["jacobian"].outputs,
    params:
        job=PARAMS.job("jacobian"),
        files=STUDIES["jacobian"].files,
    log:
        "logs/{model}/{revision}/measure_jacobian.log",
    threads: 4
    resources:
        **engine_job(5, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule combine_jacobian:
    input:
        STUDIES["jacobian"].per_checkpoint("norms", PLAN.stage_checkpoints("jacobian")),
    output:
        table_report("results/jacobian.parquet", STUDIES["jacobian"].caption("jacobian")),
    log:
        "logs/combine_jacobian.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("combine_tables.py")
