# The third test: selected variants healed toward the base model's own predictions (swapkl.probes.healed), and
# the map of how much every test of a checkpoint disagrees with every other (swapkl.probes.disagreement).


def get_healed_probe_inputs(wildcards):
    model = config["models"][wildcards.model]
    return {
        "checkpoint": get_checkpoint_input(wildcards),
        "probes": [probe_file(wildcards.model, wildcards.revision, p) for p in PROBE_PROTOCOLS],
        "text": text_files(model["data"], model["healed_probes"]["calibration"]),
    }


def family_members(wildcards):
    """{member: its probe tables at this revision} of the seed family led by this model."""
    led = [f for f in SEED_FAMILIES.values() if list(f["members"])[0] == wildcards.model]
    if not led:
        return {}
    enabled = set(enabled_models())
    return {m: [probe_file(m, wildcards.revision, p) for p in ("replacement", "interchange")]
            for m in list(led[0]["members"])[1:]
            if m in enabled and wildcards.revision in config["models"][m]["revisions"]}


def get_test_agreement_inputs(wildcards):
    model, revision = wildcards.model, wildcards.revision
    inputs = {
        "probes": [probe_file(model, revision, p) for p in PROBE_PROTOCOLS],
        "representation": repr_file(model, revision),
        "healed": healed_file(model, revision),
        "members": [f for files in family_members(wildcards).values() for f in files],
    }
    if (model, revision) in relevance_checkpoints():
        inputs["relevance"] = relevance_file(model, revision)
    return inputs


rule probe_healed:
    input:
        unpack(get_healed_probe_inputs),
    output:
        healed_file("{model}", "{revision}"),
    params:
        checkpoint=get_checkpoint_dir,
        healed=lambda wildcards: config["models"][wildcards.model]["healed_probes"],
        data=get_probe_data,
        **model_settings("dtype", "batch_size"),
    log:
        "logs/{model}/{revision}/probe_healed.log",
    threads: 1
    resources:
        **engine_job(60, gpu=job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe_healed.py"


rule measure_test_agreement:
    input:
        unpack(get_test_agreement_inputs),
    output:
        test_agreement_file("{model}", "{revision}"),
    params:
        members=family_members,
        **BOOTSTRAP,
    log:
        "logs/{model}/{revision}/measure_test_agreement.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_test_agreement.py"


rule aggregate_healed:
    input:
        **per_checkpoint_files(healed_checkpoints(), healed=healed_file, agreement=test_agreement_file),
    output:
        **results_tables(healed="healed", agreement="test_agreement"),
    log:
        "logs/aggregate_healed.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_healed.py"
