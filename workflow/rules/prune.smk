# Layer pruning guided by the probe scores and by the baselines: one GPU job per pruned checkpoint, then
# one pruning table and one guide-agreement table over every pruned checkpoint; the pruning table's bootstrap
# CIs are computed there (probe.n_boot resamples, each checkpoint's prune.seed), not in the GPU jobs.


rule prune_layers:
    input:
        unpack(PARAMS.prune_inputs),
    output:
        pruning="results/pruning/{model}/{revision}/pruning.parquet",
        agreement="results/pruning/{model}/{revision}/agreement.parquet",
    params:
        job=PARAMS.job("prune"),
        files=lambda wildcards, input, output: {"probe_files": list(input.probes), "repr_file": input.representation,
                                                "out": output.pruning, "agreement_out": output.agreement},
    log:
        "logs/{model}/{revision}/prune_layers.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_layers.tsv"
    threads: 4
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_pruning:
    input:
        **per_checkpoint_files(PLAN.stage_checkpoints("prune"), pruning=pruning_file, agreement=agreement_file),
    output:
        **results_tables(pruning="pruning", agreement="pruning_agreement"),
    params:
        n_boot=BOOTSTRAP["n_boot"],
    log:
        "logs/aggregate_pruning.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_pruning.py"
