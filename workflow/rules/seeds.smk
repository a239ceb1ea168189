# Across-seed statistics of the seed families (config `seeds` blocks, expanded in common.smk): the gap,
# pair-ranking stability, pruning choices and the data-order / initialisation decomposition
# (swapkl.studies.seeds), and the gap-vs-step figure with the across-seed band per family.


rule summarise_seeds:
    input:
        unpack(PARAMS.seeds_inputs),
    output:
        table_report("results/seeds.parquet", "seeds_table.rst"),
    params:
        families=PLAN.seed_families(),
    log:
        "logs/summarise_seeds.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_seeds.py"
