# The probe protocols (swapkl.probes.protocols) on the model's widest pair set (StudyPlan.probe_pairs); the aggregate
# reports each configured pair set by filtering and computes the confidence intervals (so that probe.n_boot and
# probe.seed are no parameters here: changing them re-runs no GPU job).
# Rule probe_checkpoint: one GPU job per checkpoint loads the model once and measures every protocol that changes
# no weights (checkpoint_protocols: replacement, interchange, deletion) in one sweep that shares each batch's base
# pass, writing each protocol's file as its own run would, with deletion's representation baselines and, for a
# model with `covariates: true`, the per-pair covariates (covariates.smk). Outputs are fixed patterns, so each
# combination of a model's `deletion` and `covariates` switches has a rule of its own (checkpoint_models). Its
# runtime: the minutes per GB of what it measures, summed.
# Rule probe: the weight-changing protocols, one job each, for the models that list them under `weight_protocols`.

from swapkl.probes.protocols import weight_protocol_names


rule probe_checkpoint:
    input:
        unpack(PARAMS.probe_inputs),
    output:
        **checkpoint_job(deletion=True, covariates=False).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=True, covariates=False).model,
    params:
        job=PARAMS.job("probe"),
        files=PARAMS.checkpoint_probe_files,
    log:
        "logs/{model}/{revision}/probe_checkpoint.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_checkpoint.tsv"
    threads: 4
    resources:
        gpu=PARAMS.job_gpus,
        mem_mb=PARAMS.gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=True, covariates=False).runtime,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


use rule probe_checkpoint as probe_checkpoint_without_deletion with:
    output:
        **checkpoint_job(deletion=False, covariates=False).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=False, covariates=False).model,
    resources:
        gpu=PARAMS.job_gpus,
        mem_mb=PARAMS.gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=False, covariates=False).runtime,


use rule probe_checkpoint as probe_checkpoint_with_covariates with:
    output:
        **checkpoint_job(deletion=True, covariates=True).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=True, covariates=True).model,
    resources:
        gpu=PARAMS.job_gpus,
        mem_mb=PARAMS.gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=True, covariates=True).runtime,


use rule probe_checkpoint as probe_checkpoint_without_deletion_with_covariates with:
    output:
        **checkpoint_job(deletion=False, covariates=True).output,
    wildcard_constraints:
        model=checkpoint_job(deletion=False, covariates=True).model,
    resources:
        gpu=PARAMS.job_gpus,
        mem_mb=PARAMS.gpu_job_mem_mb,
        runtime=checkpoint_job(deletion=False, covariates=True).runtime,


use rule probe_checkpoint as probe with:
    output:
        probe=probe_file("{model}", "{revision}", "{protocol}"),
    wildcard_constraints:
        model=name_regex(PLAN.enabled_models()),
        protocol=name_regex(weight_protocol_names()),
    params:
        files=PARAMS.protocol_probe_files,
    log:
        "logs/{model}/{revision}/probe_{protocol}.log",
    benchmark:
        "benchmarks/{model}/{revision}/probe_{protocol}.tsv"
    resources:
        gpu=PARAMS.job_gpus,
        mem_mb=PARAMS.gpu_job_mem_mb,
        runtime=lambda wildcards, attempt: probe_runtime([wildcards.protocol])(wildcards, attempt),
