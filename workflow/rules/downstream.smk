# Downstream benchmarks (the paper's section "Downstream Task Benchmarks"): per scored checkpoint one engine job
# scores the tasks on the base model, the pruning guides' pruned models (engine variants) and the healed models of
# the recovery stage (loaded); one table and, per checkpoint, its table figure (figure registry).

from swapkl.layout import DEMO_LAST_WORD_FILE, downstream_file


rule build_demo_last_word:
    input:
        DEMO_CORPUS,
    output:
        DEMO_LAST_WORD_FILE,
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input[0]),
    log:
        "logs/demo/build_demo_last_word.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/build_demo_last_word.py"


rule score_downstream:
    input:
        unpack(PARAMS.downstream_inputs),
    output:
        downstream_file.template,
    params:
        job=PARAMS.job("downstream"),
        files=lambda wildcards, input, output: {"out": output[0], "pruning": input.get("pruning"),
                                                "healed_dir": input.get("healed")},
    log:
        "logs/{model}/{revision}/score_downstream.log",
    benchmark:
        "benchmarks/{model}/{revision}/score_downstream.tsv"
    threads: 1
    resources:
        **engine_job(20, gpu=PARAMS.job_gpus),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/run_job.py"


rule aggregate_downstream:
    input:
        per_checkpoint(downstream_file, PLAN.stage_checkpoints("downstream")),
    output:
        table_report("results/downstream.parquet", "downstream_table.rst"),
    log:
        "logs/aggregate_downstream.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_downstream.py"
