# The probe protocols, one GPU job each per checkpoint, on the model's widest pair set (get_probe_pairs);
# the aggregate reports each configured pair set by filtering and computes the confidence intervals (so that
# probe.n_boot and probe.seed are no parameters here: changing them re-runs no GPU job). The other protocols are probe_replacement
# with their protocol, output and runtime (deletion also writes the representation baselines).


rule probe_replacement:
    input:
        unpack(get_probe_inputs),
    output:
        probe=probe_file("{model}", "{revision}", "replacement"),
    params:
        protocol="replacement",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        rope_scaling=lambda wildcards: config["models"][wildcards.model]["rope_scaling"],
        kl=lambda wildcards: canonical(config["models"][wildcards.model]["kl"]),
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        rope=lambda wildcards: "on" if rope_is_on(config["models"][wildcards.model]) else "off",
        progress=get_progress_path("replacement"),
        metadata=get_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/probe_replacement.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_replacement.tsv"
    threads: 4
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=15),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


use rule probe_replacement as probe_interchange with:
    output:
        probe=probe_file("{model}", "{revision}", "interchange"),
    params:
        protocol="interchange",
        progress=get_progress_path("interchange"),
    log:
        "logs/{model}/{revision}/probe_interchange.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_interchange.tsv"
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=8),


use rule probe_replacement as probe_deletion with:
    output:
        probe=probe_file("{model}", "{revision}", "deletion"),
        representation=repr_file("{model}", "{revision}"),
    params:
        protocol="deletion",
        progress=get_progress_path("deletion"),
    log:
        "logs/{model}/{revision}/probe_deletion.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_deletion.tsv"
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=2),


# Weight-changing protocols (swapkl.probes.pairs): only for models that list them under `weight_protocols`.


use rule probe_replacement as probe_averaging with:
    output:
        probe=probe_file("{model}", "{revision}", "averaging"),
    params:
        protocol="averaging",
        progress=get_progress_path("averaging"),
    log:
        "logs/{model}/{revision}/probe_averaging.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_averaging.tsv"
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=16),


use rule probe_replacement as probe_head_interchange with:
    output:
        probe=probe_file("{model}", "{revision}", "head_interchange"),
    params:
        protocol="head_interchange",
        progress=get_progress_path("head_interchange"),
    log:
        "logs/{model}/{revision}/probe_head_interchange.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_head_interchange.tsv"
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=16),


# The paper's own variants of the two (swapkl.probes.pairs): both-slot averaging, one-direction head swap.


use rule probe_replacement as probe_averaging_paper with:
    output:
        probe=probe_file("{model}", "{revision}", "averaging_paper"),
    params:
        protocol="averaging_paper",
        progress=get_progress_path("averaging_paper"),
    log:
        "logs/{model}/{revision}/probe_averaging_paper.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_averaging_paper.tsv"
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=8),


use rule probe_replacement as probe_head_interchange_paper with:
    output:
        probe=probe_file("{model}", "{revision}", "head_interchange_paper"),
    params:
        protocol="head_interchange_paper",
        progress=get_progress_path("head_interchange_paper"),
    log:
        "logs/{model}/{revision}/probe_head_interchange_paper.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_head_interchange_paper.tsv"
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=16),
