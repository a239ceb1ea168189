# Predictor validity: every single-block removal's perplexity cost on the model's prune.eval text at its last
# revision (one GPU job), correlated with the pair scores of the aggregate (swapkl.studies.predictor_validity).


rule measure_predictor_validity:
    input:
        table="results/swapkl.parquet",
        checkpoint=lambda wildcards: PARAMS.checkpoint_input(at_last_revision(wildcards)),
    output:
        table_report("results/predictor_validity/{model}.parquet", "predictor_validity_table.rst"),
    wildcard_constraints:
        model=name_regex(PLAN.predictor_validity_models()),
    params:
        checkpoint=lambda wildcards: PARAMS.checkpoint_dir(at_last_revision(wildcards)),
        revision=lambda wildcards: PLAN.last_revision(wildcards.model),
        eval_data=PARAMS.prune_eval,
        **model_settings("dtype", "batch_size"),
    log:
        "logs/{model}/measure_predictor_validity.log",
    threads: 4
    resources:
        gpu=1,
        mem_mb=lambda wildcards, attempt: PARAMS.gpu_job_mem_mb(at_last_revision(wildcards), attempt),
        runtime=lambda wildcards, attempt: PARAMS.gpu_job_runtime(minutes_per_gb=5)(at_last_revision(wildcards), attempt),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_predictor_validity.py"
