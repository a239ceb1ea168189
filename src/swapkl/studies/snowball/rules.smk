# The snowball construction, the rule of the study's folder (swapkl.studies.snowball; the config's top-level
# `snowball` section): one CPU job builds the hand-set 7-block LLaMA on the first `max_docs` documents of a demo
# task and writes every block's BI and the accuracy without it to results/snowball.parquet
# (swapkl.relevance.snowball_table), drawn by the figure `snowball`.

from swapkl.studies.snowball import snowball_settings, snowball_task


rule construct_snowball:
    input:
        task=snowball_task(config) or [],  # build_demo_tasks writes it with its .jsonl documents
    output:
        table_report("results/snowball.parquet", STUDIES["snowball"].caption("snowball")),
    params:
        settings=snowball_settings(config),
    log:
        "logs/construct_snowball.log",
    benchmark:
        "benchmarks/construct_snowball.tsv"
    threads: 1
    resources:
        **SUMMARY_JOB,
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("construct_snowball.py")
