# The probe protocols, one GPU job each per checkpoint, on the model's widest pair set
# (get_probe_pairs); the aggregate reports each configured pair set by filtering.


rule probe_replacement:
    input:
        unpack(get_probe_inputs),
    output:
        probe="results/probes/{model}/{revision}/replacement.parquet",
    params:
        protocol="replacement",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        progress=get_progress_path("replacement"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/probe_replacement.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_replacement.tsv"
    threads: 4
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=15),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


rule probe_interchange:
    input:
        unpack(get_probe_inputs),
    output:
        probe="results/probes/{model}/{revision}/interchange.parquet",
    params:
        protocol="interchange",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        progress=get_progress_path("interchange"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/probe_interchange.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_interchange.tsv"
    threads: 4
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=8),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


rule probe_deletion:
    input:
        unpack(get_probe_inputs),
    output:
        probe="results/probes/{model}/{revision}/deletion.parquet",
        representation="results/probes/{model}/{revision}/representation.parquet",
    params:
        protocol="deletion",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        progress=get_progress_path("deletion"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/probe_deletion.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_deletion.tsv"
    threads: 4
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=2),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


# Weight-changing protocols (swapkl.pairs): only for models that list them under `weight_protocols`.


rule probe_averaging:
    input:
        unpack(get_probe_inputs),
    output:
        probe="results/probes/{model}/{revision}/averaging.parquet",
    params:
        protocol="averaging",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        progress=get_progress_path("averaging"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/probe_averaging.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_averaging.tsv"
    threads: 4
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=16),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


rule probe_head_interchange:
    input:
        unpack(get_probe_inputs),
    output:
        probe="results/probes/{model}/{revision}/head_interchange.parquet",
    params:
        protocol="head_interchange",
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
        progress=get_progress_path("head_interchange"),
        metadata=get_metadata,
    log:
        "logs/{model}/{revision}/probe_head_interchange.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_head_interchange.tsv"
    threads: 4
    resources:
        gpu=1,
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=16),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"
