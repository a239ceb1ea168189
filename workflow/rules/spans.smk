# Span experiments of the layer-order literature ("Transformer Layers as Painters"): for every checkpoint of a
# model with `spans.enabled`, one engine job measures skip / reverse / shuffle / repeat / parallel / looped
# parallel on every symmetric middle span [s, L-s) (on the probe windows), the tables are gathered into
# results/spans.parquet beside the mean adjacent interchange and replacement KL, and one figure per checkpoint.


rule probe_spans:
    input:
        unpack(PARAMS.probe_inputs),
    output:
        span_file("{model}", "{revision}"),
    params:
        job=PARAMS.job("spans"),
        files=lambda wildcards, output: {"out": output[0]},
    log:
        "logs/{model}/{revision}/probe_spans.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_spans.tsv"
    threads: 1
    resources:
        **engine_job(4, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_spans:
    input:
        spans=per_checkpoint(span_file, PLAN.stage_checkpoints("spans")),
        table="results/swapkl.parquet",
    output:
        table_report("results/spans.parquet", "spans_table.rst"),
    params:
        **BOOTSTRAP,
    log:
        "logs/aggregate_spans.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_spans.py"
