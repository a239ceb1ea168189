# Span experiments of the layer-order literature ("Transformer Layers as Painters"): for every checkpoint of a
# model with `spans.enabled`, one engine job measures skip / reverse / shuffle / repeat / parallel / looped
# parallel on every symmetric middle span [s, L-s) (on the probe windows), the tables are gathered into
# results/spans.parquet beside the mean adjacent interchange and replacement KL, and one figure per checkpoint.


rule probe_spans:
    input:
        unpack(get_probe_inputs),
    output:
        span_file("{model}", "{revision}"),
    params:
        checkpoint=get_checkpoint_dir,
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        spans=get_span_settings,
        metadata=get_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/probe_spans.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_spans.tsv"
    threads: 1
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=4),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe_spans.py"


rule aggregate_spans:
    input:
        spans=[span_file(model, revision) for model, revision in span_checkpoints()],
        table="results/swapkl.parquet",
    output:
        report("results/spans.parquet", caption="../report/spans_table.rst", category=section("tables")),
    params:
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
    log:
        "logs/aggregate_spans.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_spans.py"
