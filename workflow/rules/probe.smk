# The probe protocols (swapkl.probes.protocols) on the model's widest pair set (get_probe_pairs); the aggregate
# reports each configured pair set by filtering and computes the confidence intervals (so that probe.n_boot and
# probe.seed are no parameters here: changing them re-runs no GPU job).
# Rule probe_checkpoint: one GPU job per checkpoint measures every protocol that changes no weights
# (checkpoint_protocols: replacement, interchange, deletion) in one sweep that shares each batch's base pass,
# and writes each protocol's file as its own run would, with deletion's representation baselines. Outputs are
# fixed patterns, so the models with `deletion: false` get the same rule without deletion's files:
# probe_checkpoint_without_deletion. Its runtime: the protocols' minutes per GB, summed.
# Rule probe: the weight-changing protocols, one job each, for the models that list them under `weight_protocols`.

from swapkl.probes.protocols import get_protocol, weight_protocol_names


def probe_files(protocols):
    """The named outputs of a probe job: each protocol's file of the checkpoint."""
    return {protocol: probe_file("{model}", "{revision}", protocol) for protocol in protocols}


def probe_runtime(protocols):
    """Runtime of a probe job measuring ``protocols``: their minutes per GB of weights, summed."""
    return gpu_job_runtime(minutes_per_gb=sum(get_protocol(p).minutes_per_gb for p in protocols))


rule probe_checkpoint:
    input:
        unpack(get_probe_inputs),
    output:
        **probe_files(PROBE_PROTOCOLS),
        representation=repr_file("{model}", "{revision}"),
    wildcard_constraints:
        model=name_regex(deletion_models()),
    params:
        out=lambda wildcards, output: {p: output[p] for p in checkpoint_protocols(wildcards.model)},
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        **model_settings("dtype", "rope_scaling", "batch_size"),
        kl=lambda wildcards: canonical(config["models"][wildcards.model]["kl"]),
        rope=lambda wildcards: "on" if rope_is_on(config["models"][wildcards.model]) else "off",
        progress=get_checkpoint_progress_paths,
        metadata=get_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/probe_checkpoint.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_checkpoint.tsv"
    threads: 4
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=probe_runtime(PROBE_PROTOCOLS),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


use rule probe_checkpoint as probe_checkpoint_without_deletion with:
    output:
        **probe_files(p for p in PROBE_PROTOCOLS if p != "deletion"),
    wildcard_constraints:
        model=name_regex(deletion_models(False)),
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=probe_runtime(p for p in PROBE_PROTOCOLS if p != "deletion"),


use rule probe_checkpoint as probe with:
    output:
        probe=probe_file("{model}", "{revision}", "{protocol}"),
    wildcard_constraints:
        model=name_regex(enabled_models()),
        protocol=name_regex(weight_protocol_names()),
    params:
        out=lambda wildcards, output: {wildcards.protocol: output.probe},
        progress=lambda wildcards: {wildcards.protocol: get_progress_path(wildcards.protocol)(wildcards)},
    log:
        "logs/{model}/{revision}/probe_{protocol}.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_{protocol}.tsv"
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=lambda wildcards, attempt: probe_runtime([wildcards.protocol])(wildcards, attempt),
