# The scale sweep, the rule of the study's folder (swapkl.studies.scaling): one row per model with
# `scaling.enabled` (its final checkpoint, adjacent pairs) from the aggregate, with architecture, position encoding
# and parameter count read from the checkpoint.


rule summarise_scaling:
    input:
        table="results/swapkl.parquet",
        checkpoints=lambda wildcards: [path for m, r in PLAN.stage_checkpoints("scaling")
                                       for path in PARAMS.checkpoint_input(SimpleNamespace(model=m, revision=r))],
    output:
        table_report("results/scaling.parquet", STUDIES["scaling"].caption("scaling")),
    params:
        checkpoints={m: (r, PARAMS.checkpoint_dir(SimpleNamespace(model=m, revision=r)))
                     for m, r in PLAN.stage_checkpoints("scaling")},
    log:
        "logs/summarise_scaling.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_scaling.py")
