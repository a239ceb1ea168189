# The report's sections, numbered over the sections this run fills, in reading order (swapkl.config.targets
# .report_sections over swapkl.figures.figure_registry.SECTIONS; a rule names its section with section("key")), the
# figures the report gets (from the figure registry), and an HTML view of every results table: the report shows
# that page (rule render_table) with the table's caption, not the Parquet file, which a browser can only download.
# Their functions (section, table_report, table_caption, results_tables, ...) are in common.smk.


#: the results tables drawn as HTML into the report (results/tables/{name}.html), as patterns of their names: the
#: built-in stages' and those of the studies kept in folders (swapkl.config.targets.result_tables)
RESULT_TABLES = result_tables()


rule render_table:
    input:
        table="results/{table}.parquet",
    output:
        report(
            "results/tables/{table}.html",
            caption="../report/table_html.rst",
            category=section("tables"),
            labels={"table": "{table}"},
        ),
    params:
        caption=lambda wildcards: table_caption(wildcards.table),
    wildcard_constraints:
        table="|".join(RESULT_TABLES),
    log:
        "logs/render_table/{table}.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/render_table.py"
