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
        dtype=lambda wildcards: config["models"][wildcards.model]["dtype"],
        batch_size=lambda wildcards: config["models"][wildcards.model]["batch_size"],
    log:
        "logs/{model}/{revision}/probe_healed.log",
    threads: 1
    resources:
        mem_mb=gpu_job_mem_mb,
        runtime=gpu_job_runtime(minutes_per_gb=60),
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
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
    log:
        "logs/{model}/{revision}/measure_test_agreement.log",
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/measure_test_agreement.py"


rule aggregate_healed:
    input:
        healed=[healed_file(m, r) for m, r in healed_checkpoints()],
        agreement=[test_agreement_file(m, r) for m, r in healed_checkpoints()],
    output:
        healed=report("results/healed.parquet", caption="../report/healed_table.rst", category=section("tables")),
        agreement=report("results/test_agreement.parquet", caption="../report/test_agreement_table.rst",
                         category=section("tables")),
    log:
        "logs/aggregate_healed.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_healed.py"
