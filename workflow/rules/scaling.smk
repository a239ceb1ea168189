# The scale sweep: one row per model marked `scaling: true` (its last revision, adjacent pairs) from the
# aggregate, with architecture, position encoding and parameter count read from the checkpoint (swapkl.studies.scaling).


rule summarise_scaling:
    input:
        table="results/swapkl.parquet",
        checkpoints=lambda wildcards: [path for m in PLAN.scaling_models() for path in
                                       PARAMS.checkpoint_input(SimpleNamespace(model=m, revision=PLAN.last_revision(m)))],
    output:
        table_report("results/scaling.parquet", "scaling_table.rst"),
    params:
        checkpoints=_scaling_checkpoints(),
    log:
        "logs/summarise_scaling.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_scaling.py"
