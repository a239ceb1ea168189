# Across-seed statistics of the seed families (config `seeds` blocks, expanded in common.smk): the gap,
# pair-ranking stability, pruning choices and the data-order / initialisation decomposition
# (swapkl.stats.seeds), and the gap-vs-step figure with the across-seed band per family.


rule summarise_seeds:
    input:
        unpack(get_seeds_inputs),
    output:
        report(
            "results/seeds.parquet",
            caption="../report/seeds_table.rst",
            category=section("tables"),
        ),
    params:
        families=get_seed_families(),
    log:
        "logs/summarise_seeds.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_seeds.py"


rule plot_seed_band:
    input:
        seeds="results/seeds.parquet",
    output:
        png=report(
            "results/figures/seeds/{family}.png",
            caption="../report/seed_band.rst",
            category=section("seeds"),
            labels={"family": "{family}"},
        ),
        pdf="results/figures/seeds/{family}.pdf",
    wildcard_constraints:
        family=name_regex(seed_band_families()),
    params:
        setup=lambda wildcards: describe_family(wildcards.family),
    log:
        "logs/seeds/{family}/plot_seed_band.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_seed_band.py"
