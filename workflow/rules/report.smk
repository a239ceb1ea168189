# The report's sections, numbered from one list (swapkl.figures.figure_registry.SECTIONS; a rule names its section with
# section("key")), the figures the report gets (from the figure registry), and an HTML view of every results table
# (the report cannot show Parquet).

import re

from swapkl.config.targets import figure_instances as _figure_instances
from swapkl.figures.figure_registry import SECTIONS as REPORT_SECTIONS


#: the results tables drawn as HTML into the report (results/tables/{name}.html), as patterns of their names
RESULT_TABLES = (
    "swapkl", "pruning", "pruning_agreement", "relevance", "relevance_stats", "seeds", "covariates",
    "covariate_correlations", "scaling", "jacobian", "convergence", "domain_slices", r"rope_counterfactual/[^/]+",
    r"predictor_validity/[^/]+", "recovery", "healed", "test_agreement", "spans", "pe_ablation", "downstream", "seed003_pruning",
    "seed003_tables", "snowball", "optimal_search",
)


def section(key):
    """The report category of section ``key``: its number and title."""
    return f"{list(REPORT_SECTIONS).index(key) + 1}. {REPORT_SECTIONS[key]}"


def table_report(path, caption, **labels):
    """A results table in the report's tables section, with its caption (workflow/report/) and labels."""
    return report(path, caption=f"../report/{caption}", category=section("tables"), labels=labels or None)


def results_tables(**stems):
    """Named outputs of a job that writes several results tables: ``{name: results/<stem>.parquet}``, each in
    the report with its caption ``<stem>_table.rst``."""
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
    wildcard_constraints:
        table="|".join(RESULT_TABLES),
    log:
        "logs/render_table/{table}.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/render_table.py"
