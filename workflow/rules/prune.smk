# Layer pruning guided by the probe scores and by the baselines: one GPU job per pruned checkpoint, then
# one pruning table and one guide-agreement table over every pruned checkpoint; the pruning table's bootstrap
# CIs are computed there (probe.n_boot resamples, each checkpoint's prune.seed), not in the GPU jobs.


rule prune_layers:
    input:
        unpack(get_prune_inputs),
    output:
        pruning="results/pruning/{model}/{revision}/pruning.parquet",
        agreement="results/pruning/{model}/{revision}/agreement.parquet",
    params:
        checkpoint=get_checkpoint_dir,
        budgets=lambda wildcards: list(range(1, config["models"][wildcards.model]["prune"]["max_budget"] + 1)),
        eval_data=lambda wildcards: without_nulls(config["models"][wildcards.model]["prune"]["eval"]),
        calib_data=lambda wildcards: without_nulls(config["models"][wildcards.model]["prune"]["calibration"]),
        selection=get_selection_options,
        **model_settings("spacing", "n_random", "angular_metric", "allow_overlap", "seed", "compute_dtype",
                         section="prune"),
        **model_settings("dtype", "rope_scaling", "logits_dtype", "batch_size"),
        metadata=get_prune_metadata,
        placement=get_placement,
    log:
        "logs/{model}/{revision}/prune_layers.log",
    benchmark:
        "benchmarks/{model}/{revision}/prune_layers.tsv"
    threads: 4
    resources:
        **engine_job(20, gpu=job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prune_layers.py"


rule aggregate_pruning:
    input:
        **per_checkpoint_files(prune_checkpoints(), pruning=pruning_file, agreement=agreement_file),
    output:
        **results_tables(pruning="pruning", agreement="pruning_agreement"),
    params:
        n_boot=config["probe"]["n_boot"],
    log:
        "logs/aggregate_pruning.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_pruning.py"
