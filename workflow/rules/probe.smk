# The probe protocols (swapkl.probes.protocols) on the model's widest pair set (get_probe_pairs); the aggregate
# reports each configured pair set by filtering and computes the confidence intervals (so that probe.n_boot and
# probe.seed are no parameters here: changing them re-runs no GPU job).
# Rule probe_checkpoint: one GPU job per checkpoint loads the model once and measures every protocol that changes
# no weights (checkpoint_protocols: replacement, interchange, deletion) in one sweep that shares each batch's base
# pass, writing each protocol's file as its own run would, with deletion's representation baselines and, for a
# model with `covariates: true`, the per-pair covariates (covariates.smk). Outputs are fixed patterns, so each
# combination of a model's `deletion` and `covariates` switches has a rule of its own (checkpoint_models). Its
# runtime: the minutes per GB of what it measures, summed.
# Rule probe: the weight-changing protocols, one job each, for the models that list them under `weight_protocols`.

from swapkl.probes.protocols import get_protocol, weight_protocol_names

#: the runtime of measuring the covariates, in minutes per GB of weights
COVARIATES_MINUTES_PER_GB = 4


def probe_files(protocols):
    """The named outputs of a probe job: each protocol's file of the checkpoint."""
    return {protocol: probe_file("{model}", "{revision}", protocol) for protocol in protocols}


def checkpoint_job(deletion, covariates):
    """The outputs, the model constraint and the runtime of the checkpoint job of the models with deletion and
    covariates on or off."""
    protocols = checkpoint_protocols_with(deletion)
    output = {**probe_files(protocols),
              **({"representation": repr_file("{model}", "{revision}")} if deletion else {}),
              **({"covariates": covariate_file("{model}", "{revision}")} if covariates else {})}
    return SimpleNamespace(output=output, model=name_regex(checkpoint_models(deletion, covariates)),
                           runtime=probe_runtime(protocols, covariates))


def probe_runtime(protocols, covariates=False):
    """Runtime of a probe job measuring ``protocols`` (and the covariates): their minutes per GB, summed."""
    minutes = sum(get_protocol(p).minutes_per_gb for p in protocols) + covariates * COVARIATES_MINUTES_PER_GB
    return gpu_job_runtime(minutes_per_gb=minutes)


rule probe_checkpoint:
    input:
        unpack(get_probe_inputs),
    output:
        **checkpoint_job(deletion=True, covariates=False).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=True, covariates=False).model,
    params:
        out=lambda wildcards, output: {p: output[p] for p in checkpoint_protocols(wildcards.model)},
        checkpoint=get_checkpoint_dir,
        pairs=lambda wildcards: get_probe_pairs(wildcards.model),
        data=get_probe_data,
        **model_settings("dtype", "rope_scaling", "logits_dtype", "batch_size"),
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
        runtime=checkpoint_job(deletion=True, covariates=False).runtime,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe.py"


use rule probe_checkpoint as probe_checkpoint_without_deletion with:
    output:
        **checkpoint_job(deletion=False, covariates=False).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=False, covariates=False).model,
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=False, covariates=False).runtime,


use rule probe_checkpoint as probe_checkpoint_with_covariates with:
    output:
        **checkpoint_job(deletion=True, covariates=True).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=True, covariates=True).model,
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=True, covariates=True).runtime,


use rule probe_checkpoint as probe_checkpoint_without_deletion_with_covariates with:
    output:
        **checkpoint_job(deletion=False, covariates=True).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=False, covariates=True).model,
    resources:
        gpu=job_gpus,
        mem_mb=gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=False, covariates=True).runtime,


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
