# The third test (swapkl.studies.healed_probes), the rules of the study's folder: selected variants healed toward
# the base model's own predictions (swapkl.recovery.healed), and the map of how much every test of a checkpoint
# disagrees with every other (swapkl.probes.disagreement); gathered into results/healed.parquet and
# results/test_agreement.parquet.

from swapkl.studies.healed_probes import agreement_inputs as healed_agreement_inputs


rule probe_healed:
    input:
        unpack(STUDIES["healed_probes"].rule_inputs(PARAMS)),
    output:
        healed=STUDIES["healed_probes"].outputs["healed"],
    params:
        job=PARAMS.job("healed_probes"),
        files=STUDIES["healed_probes"].files,
    log:
        "logs/{model}/{revision}/probe_healed.log",
    threads: 1
    resources:
        **engine_job(60, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule measure_test_agreement:
    input:
        unpack(lambda wildcards: healed_agreement_inputs(PARAMS, wildcards)),
    output:
        STUDIES["healed_probes"].outputs["test_agreement"],
    params:
        members=PARAMS.family_members,
        **BOOTSTRAP,
    log:
        "logs/{model}/{revision}/measure_test_agreement.log",
    resources:
        **SUMMARY_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("measure_test_agreement.py")


rule aggregate_healed:
    input:
        healed=STUDIES["healed_probes"].per_checkpoint("healed", PLAN.stage_checkpoints("healed_probes")),
        agreement=STUDIES["healed_probes"].per_checkpoint("test_agreement", PLAN.stage_checkpoints("healed_probes")),
    output:
        healed=table_report("results/healed.parquet", STUDIES["healed_probes"].caption("healed")),
        agreement=table_report("results/test_agreement.parquet", STUDIES["healed_probes"].caption("test_agreement")),
    log:
        "logs/aggregate_healed.log",
    resources:
        **TABLE_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("aggregate_healed.py")
