# Hub checkpoints: one snapshot (safetensors only) per model x revision under resources/checkpoints/.
# Gated repositories (meta-llama/Llama-3.1-8B) need a token: `hf auth login` or HF_TOKEN.


localrules:
    download_checkpoint,


rule download_checkpoint:
    output:
        directory("resources/checkpoints/{model}/{revision}"),
    wildcard_constraints:
        model=name_regex(PLAN.models_with("source")),
    params:
        **model_settings("source"),
        retries=5,
        # a seed-family member's revision that the hub lacks is recorded as absent (swapkl.hub.absence)
        member=lambda wildcards: wildcards.model if wildcards.model in PLAN.seed_members() else None,
    log:
        "logs/{model}/{revision}/download_checkpoint.log",
    # one retry layer: swapkl.hub.download retries transient errors itself (params.retries, with backoff) and fails
    # at once on errors that retrying cannot fix (no hub, no access, no such revision)
    retries: 0
    conda:
        "../../envs/download.yaml"
    script:
        "../scripts/download_checkpoint.py"
