# Domain slices, the rule of the study's folder (swapkl.studies.domain_slices): every checkpoint of a model with
# `domain_slices.enabled` (by default its last revision) against the pruning of its `reference` at that revision,
# from the pruning table, into one table.

from swapkl.studies.domain_slices import slices as domain_slices


rule summarise_domain_slices:
    input:
        table="results/pruning.parquet",
    output:
        table_report("results/domain_slices.parquet", STUDIES["domain_slices"].caption("domain_slices")),
    params:
        slices=domain_slices(PLAN),
    log:
        "logs/summarise_domain_slices.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_domain_slices.py")
