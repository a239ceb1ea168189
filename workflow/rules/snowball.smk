# The snowball construction (config block `snowball`, swapkl.relevance.construct): one CPU job builds the hand-set
# 7-block LLaMA on the first `max_docs` documents of a demo task and writes every block's BI and the accuracy
# without it to results/snowball.parquet (swapkl.relevance.snowball_table), drawn by the figure `snowball`.

from swapkl.config.targets import SNOWBALL_TABLE


rule construct_snowball:
    input:
        task=PLAN.snowball_task() or [],  # build_demo_tasks writes it with its .jsonl documents
    output:
        table_report(SNOWBALL_TABLE, "snowball_table.rst"),
    params:
        settings=PARAMS.snowball_settings(),
    log:
        "logs/construct_snowball.log",
    benchmark:
        "benchmarks/construct_snowball.tsv"
    threads: 1
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/construct_snowball.py"
