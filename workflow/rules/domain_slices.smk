# Domain slices: models marked `domain_slice_of: <reference>` prune the reference's weights with the same guides
# but measure perplexity on another text; the rank correlation of the two pruning costs (swapkl.studies.domain_slices).


rule summarise_domain_slices:
    input:
        table="results/pruning.parquet",
    output:
        table_report("results/domain_slices.parquet", "domain_slices_table.rst"),
    params:
        slices=[[m, config["models"][m]["domain_slice_of"], PLAN.last_revision(m)] for m in PLAN.domain_slice_models()],
    log:
        "logs/summarise_domain_slices.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_domain_slices.py"
