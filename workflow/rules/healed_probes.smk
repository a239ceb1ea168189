# The third test: selected variants healed toward the base model's own predictions (swapkl.recovery.healed), and
# the map of how much every test of a checkpoint disagrees with every other (swapkl.probes.disagreement).


rule probe_healed:
    input:
        unpack(PARAMS.healed_probe_inputs),
    output:
        healed_file("{model}", "{revision}"),
    params:
        job=PARAMS.job("healed_probe"),
        files=lambda wildcards, input, output: {"probe_files": list(input.probes), "out": output[0]},
    log:
        "logs/{model}/{revision}/probe_healed.log",
    threads: 1
    resources:
        **engine_job(60, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule measure_test_agreement:
    input:
        unpack(PARAMS.test_agreement_inputs),
    output:
        test_agreement_file("{model}", "{revision}"),
    params:
        members=PARAMS.family_members,
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
        **per_checkpoint_files(PLAN.stage_checkpoints("healed_probe"), healed=healed_file,
                               agreement=test_agreement_file),
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
