# Every probe and representation Parquet into one table: directed rows, derived pair rows, per-pair-set
# summaries (see swapkl.probes.aggregate for the schema).


rule aggregate_results:
    input:
        probes=PLAN.all_probe_files(),
        representation=PLAN.all_repr_files(),
    output:
        table_report("results/swapkl.parquet", "swapkl_table.rst"),
    params:
        pair_sets=PLAN.pair_sets(),
        **BOOTSTRAP,
    log:
        "logs/aggregate_results.log",
    resources:
        **SUMMARY_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/aggregate_results.py"
