# The report's sections, numbered over the sections this run fills, in reading order (swapkl.config.targets
# .report_sections over swapkl.figures.figure_registry.SECTIONS; a rule names its section with section("key")), the
# figures the report gets (from the figure registry), and an HTML view of every results table: the report shows
# that page (rule render_table) with the table's caption, not the Parquet file, which a browser can only download.

import os
import re

from swapkl.config.targets import figure_instances as _figure_instances, report_sections
from swapkl.figures.figure_registry import SECTIONS as REPORT_SECTIONS


#: the results tables drawn as HTML into the report (results/tables/{name}.html), as patterns of their names
RESULT_TABLES = (
    "swapkl", "pruning", "pruning_agreement", "relevance", "relevance_stats", "seeds", "covariates",
    "covariate_correlations", "scaling", "jacobian", "convergence", "domain_slices", r"rope_counterfactual/[^/]+",
    r"predictor_validity/[^/]+", "recovery", "healed", "test_agreement", "spans", "pe_ablation", "downstream", "seed003_pruning",
    "seed003_tables", "snowball", "optimal_search",
)
#: the report category of each section this run fills
NUMBERED_SECTIONS = report_sections(PLAN)
#: the caption (workflow/report/) of each results table, by its name pattern; table_report() fills it
TABLE_CAPTIONS = {}


def section(key):
    """The report category of section ``key``: its number and title (a section this run does not fill, whose
    files are not in the report, has no number)."""
    return NUMBERED_SECTIONS.get(key, REPORT_SECTIONS[key])


def table_report(path, caption):
    """A results table (``results/<name>.parquet``, ``{model}`` for one per model): the report shows its HTML
    view with ``caption`` (workflow/report/); returns the path."""
    name = re.fullmatch(r"results/(.+)\.parquet", path).group(1)
    TABLE_CAPTIONS[re.escape(name).replace(re.escape("{model}"), "[^/]+")] = caption
    return path


def table_caption(table):
    """The text of the caption of results table ``table`` (the name between results/ and .parquet)."""
    found = [caption for pattern, caption in TABLE_CAPTIONS.items() if re.fullmatch(pattern, table)]
    if len(found) != 1:
        raise WorkflowError(f"results table {table}: {len(found)} captions (report.smk table_report)")
    with open(os.path.join(workflow.basedir, "workflow", "report", found[0])) as f:
        return f.read()


def results_tables(**stems):
    """Named outputs of a job that writes several results tables: ``{name: results/<stem>.parquet}``, each in
    the report (as its HTML view) with its caption ``<stem>_table.rst``."""
    return {name: table_report(f"results/{stem}.parquet", f"{stem}_table.rst") for name, stem in stems.items()}


def figure_instances(selection):
    """The wildcards of every instance of a figure the report gets (swapkl.config.targets)."""
    return _figure_instances(PLAN, selection)


def table_views(outputs):
    """results/tables/{name}.html of every results table among ``outputs``."""
    names = (re.fullmatch(r"results/(.+)\.parquet", str(path)) for path in outputs)
    return [f"results/tables/{m.group(1)}.html" for m in names
            if m and any(re.fullmatch(pattern, m.group(1)) for pattern in RESULT_TABLES)]


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
