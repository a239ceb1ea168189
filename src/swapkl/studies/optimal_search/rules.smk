# Exact removal-set search, the rules of the study's folder (swapkl.studies.optimal_search): one engine job per
# checkpoint of a model with `optimal_search.enabled` (by default its last revision), comparing greedy, beam,
# best-first and exhaustive search by calibration NLL; combined into results/optimal_search.parquet (one file per
# checkpoint, refused where two hold the same rows) and drawn by the figure `optimal_search`.


rule search_removal_sets:
    input:
        unpack(STUDIES["optimal_search"].rule_inputs(PARAMS)),
    output:
        **STUDIES["optimal_search"].outputs,
    params:
        job=PARAMS.job("optimal_search"),
        files=STUDIES["optimal_search"].files,
    log:
        "logs/{model}/{revision}/search_removal_sets.log",
    benchmark:
        "benchmarks/{model}/{revision}/search_removal_sets.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule combine_optimal_search:
    input:
        STUDIES["optimal_search"].per_checkpoint("search", PLAN.stage_checkpoints("optimal_search")),
    output:
        table_report("results/optimal_search.parquet", STUDIES["optimal_search"].caption("optimal_search")),
    log:
        "logs/combine_optimal_search.log",
    resources:
        **SUMMARY_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("combine_optimal_search.py")
