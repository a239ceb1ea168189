# Span experiments of the layer-order literature ("Transformer Layers as Painters"), the rules of the study's folder
# (swapkl.studies.spans): for every checkpoint of a model with `spans.enabled`, one engine job measures skip /
# reverse / shuffle / repeat / parallel / looped parallel on every symmetric middle span [s, L-s) (on the probe
# windows); the tables are gathered into results/spans.parquet beside the mean adjacent interchange and replacement
# KL. Its figure (one per checkpoint) is the family swapkl.figures.spans.


rule probe_spans:
    input:
        unpack(STUDIES["spans"].rule_inputs(PARAMS)),
    output:
        **STUDIES["spans"].outputs,
    params:
        job=PARAMS.job("spans"),
        files=STUDIES["spans"].files,
    log:
        "logs/{model}/{revision}/probe_spans.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_spans.tsv"
    threads: 1
    resources:
        **engine_job(4, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule aggregate_spans:
    input:
        spans=STUDIES["spans"].per_checkpoint("spans", PLAN.stage_checkpoints("spans")),
        table="results/swapkl.parquet",
    output:
        table_report("results/spans.parquet", STUDIES["spans"].caption("spans")),
    params:
        **BOOTSTRAP,
    log:
        "logs/aggregate_spans.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_spans.py")
