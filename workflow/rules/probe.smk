# The probe protocols (swapkl.probes.protocols), one GPU job each per checkpoint, on the model's widest pair set
# (get_probe_pairs); the aggregate reports each configured pair set by filtering and computes the confidence
# intervals (so that probe.n_boot and probe.seed are no parameters here: changing them re-runs no GPU job).
# One rule serves every registered protocol: its {protocol} wildcard takes the registry's names and its runtime
# the protocol's minutes per GB. Deletion's job also writes the representation baselines: rule probe_deletion.
# Which protocols a model runs: probe_protocols (common.smk); the weight-changing ones only for models that list
# them under `weight_protocols`.

from swapkl.probes.protocols import get_protocol, protocol_names


def probe_runtime(wildcards, attempt):
    """Runtime of a probe job: the protocol's minutes per GB of weights (swapkl.probes.protocols)."""
    return gpu_job_runtime(minutes_per_gb=get_protocol(wildcards.protocol).minutes_per_gb)(wildcards, attempt)


rule probe:
    input:
        unpack(get_probe_inputs),
    output:
        probe=probe_file("{model}", "{revision}", "{protocol}"),
    wildcard_constraints:
        protocol="|".join(p for p in protocol_names() if p != "deletion"),
    params:
        protocol=lambda wildcards: wildcards.protocol,
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        **model_settings("dtype", "rope_scaling", "batch_size"),
        kl=lambda wildcards: canonical(config["models"][wildcards.model]["kl"]),
        rope=lambda wildcards: "on" if rope_is_on(config["models"][wildcards.model]) else "off",
        progress=lambda wildcards: get_progress_path(wildcards.protocol)(wildcards),
        metadata=get_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/probe_{protocol}.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_{protocol}.tsv"
    threads: 4
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=probe_runtime,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


use rule probe as probe_deletion with:
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
        runtime=gpu_job_runtime(minutes_per_gb=get_protocol("deletion").minutes_per_gb),
