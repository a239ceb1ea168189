# The report's sections, numbered from one list (a rule names its section with section("key")), and an HTML
# view of every results table (the report cannot show Parquet).

import re


REPORT_SECTIONS = (
    ("scorecard", "Reproduction scorecard: published numbers against swapkl"),
    ("demo", "Demo training"),
    ("gap", "Protocol gap along training"),
    ("ratio", "I/R ratio by pair distance"),
    ("heatmaps", "Replacement and interchange heatmaps"),
    ("deletion", "Deletion KL and block influence"),
    ("weights", "Weight averaging and head-level swaps"),
    ("pruning", "Pruning cost"),
    ("agreement", "Agreement between pruning guides"),
    ("relevance", "Accuracy-based relevance"),
    ("seeds", "Protocol gap across training seeds"),
    ("covariates", "What explains the gap"),
    ("spans", "Middle-span experiments"),
    ("scale", "Scale and mechanisms"),
    ("recovery", "Recovery after pruning"),
    ("third_test", "The third test: equivalence after healing"),
    ("tables", "Tables"),
)
#: the results tables drawn as HTML into the report (results/tables/{name}.html), as patterns of their names
RESULT_TABLES = (
    "swapkl", "pruning", "pruning_agreement", "relevance", "relevance_stats", "seeds", "covariates",
    "covariate_correlations", "scaling", "jacobian", "convergence", "domain_slices", r"rope_counterfactual/[^/]+",
    r"predictor_validity/[^/]+", "recovery", "healed", "test_agreement", "spans",
)


def section(key):
    """The report category of section ``key``: its number and title."""
    keys = [k for k, _ in REPORT_SECTIONS]
    return f"{keys.index(key) + 1}. {REPORT_SECTIONS[keys.index(key)][1]}"


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
