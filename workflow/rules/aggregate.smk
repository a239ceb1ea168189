# Every probe and representation Parquet into one table: directed rows, derived pair rows, per-pair-set
# summaries (see swapkl.probes.aggregate for the schema).


rule aggregate_results:
    input:
        probes=get_all_probe_files(),
        representation=get_all_repr_files(),
    output:
        report(
            "results/swapkl.parquet",
            caption="../report/swapkl_table.rst",
            category=section("tables"),
        ),
    params:
        pair_sets=get_pair_sets(),
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
    log:
        "logs/aggregate_results.log",
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_results.py"
