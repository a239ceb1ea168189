# Exact removal-set search (swapkl.pruning.optimal, swapkl.pruning.search_cost): one engine job per model marked
# `optimal_search.enabled`, at its last revision, comparing greedy, beam, best-first and exhaustive search by
# calibration NLL; combined into results/optimal_search.parquet and drawn by the figure `optimal_search`.

from swapkl.config.layout import optimal_search_file
from swapkl.config.targets import OPTIMAL_SEARCH_TABLE


rule search_removal_sets:
    input:
        checkpoint=PARAMS.checkpoint_input,
        text=lambda wildcards: text_files(config["models"][wildcards.model]["optimal_search"]["calibration"]),
    output:
        optimal_search_file("{model}", "{revision}"),
    wildcard_constraints:
        model=name_regex(PLAN.optimal_search_models()),
    params:
        checkpoint=PARAMS.checkpoint_dir,
        calibration=lambda wildcards: without_nulls(config["models"][wildcards.model]["optimal_search"]["calibration"]),
        settings=lambda wildcards: {k: v for k, v in config["models"][wildcards.model]["optimal_search"].items()
                                    if k in ("budgets", "beam_width", "max_evals")},
        **model_settings("dtype", "batch_size"),
    log:
        "logs/{model}/{revision}/search_removal_sets.log",
    benchmark:
        "benchmarks/{model}/{revision}/search_removal_sets.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/search_removal_sets.py"


rule combine_optimal_search:
    input:
        [PLAN.optimal_search_file(m) for m in PLAN.optimal_search_models()],
    output:
        table_report(OPTIMAL_SEARCH_TABLE, "optimal_search_table.rst"),
    log:
        "logs/combine_optimal_search.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/combine_optimal_search.py"
