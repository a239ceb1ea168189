# Residual Jacobian spectral norms ||J_k||_2 per block (swapkl.studies.jacobian), one GPU job per model marked
# `jacobian.enabled` at its last revision, combined into results/jacobian.parquet and drawn against the
# blocks' swap distances from the aggregate.


rule measure_jacobian:
    input:
        unpack(PARAMS.probe_inputs),
    output:
        "results/jacobian/{model}/{revision}.parquet",
    wildcard_constraints:
        model=name_regex(PLAN.jacobian_models()),
    params:
        checkpoint=PARAMS.checkpoint_dir,
        data=PARAMS.probe_data,
        settings=lambda wildcards: {k: v for k, v in config["models"][wildcards.model]["jacobian"].items()
                                    if k != "enabled"},
        **model_settings("dtype"),
        metadata=PARAMS.metadata,
    log:
        "logs/{model}/{revision}/measure_jacobian.log",
    threads: 4
    resources:
        **engine_job(5, gpu=1),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_jacobian.py"


rule combine_jacobian:
    input:
        lambda wildcards: [PLAN.jacobian_file(m) for m in PLAN.jacobian_models()],
    output:
        table_report("results/jacobian.parquet", "jacobian_table.rst"),
    log:
        "logs/combine_jacobian.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/combine_jacobian.py"
