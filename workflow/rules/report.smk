# The report's sections, numbered from one list (swapkl.figures.registry.SECTIONS; a rule names its section with
# section("key")), the figures the report gets (from the figure registry), and an HTML view of every results table
# (the report cannot show Parquet).

import re

from swapkl.figures.registry import SECTIONS as REPORT_SECTIONS


#: the results tables drawn as HTML into the report (results/tables/{name}.html), as patterns of their names
RESULT_TABLES = (
    "swapkl", "pruning", "pruning_agreement", "relevance", "relevance_stats", "seeds", "covariates",
    "covariate_correlations", "scaling", "jacobian", "convergence", "domain_slices", r"rope_counterfactual/[^/]+",
    r"predictor_validity/[^/]+", "recovery", "healed", "test_agreement", "spans",
)


def section(key):
    """The report category of section ``key``: its number and title."""
    return f"{list(REPORT_SECTIONS).index(key) + 1}. {REPORT_SECTIONS[key]}"


def _own(names):
    """``names`` (models, or (model, revision) checkpoints) less the seed family members, which get no per-model
    figures of their own (see seed_band_families)."""
    members = seed_members()
    return [n for n in names if (n[0] if isinstance(n, tuple) else n) not in members]


def _each(names, *wildcards):
    return [dict(zip(wildcards, n if isinstance(n, tuple) else (n,))) for n in names]


def _once(condition):
    return [{}] if condition else []


# Which instances of a figure the report gets (Figure.targets: one of these; by default its scope's name): a list of
# wildcard dicts.
FIGURE_SELECTIONS = {
    "checkpoint": lambda: _each(_own(checkpoints()), "model", "revision"),
    "model": lambda: _each(_own(enabled_models()), "model"),
    "family": lambda: _each(seed_band_families(), "family"),
    "global": lambda: [{}],
    "trajectory": lambda: _each(_own(trajectory_models()), "model"),
    "deletion": lambda: _each([c for c in _own(checkpoints()) if config["models"][c[0]]["deletion"]], "model",
                              "revision"),
    "weights": lambda: _each([c for c in _own(checkpoints()) if config["models"][c[0]]["weight_protocols"]], "model",
                             "revision"),
    "demo": lambda: _once(models_with("demo")),
    "prune": lambda: _each(_own(prune_checkpoints()), "model", "revision"),
    "pruned": lambda: _once(prune_checkpoints()),
    "pruning_trajectory": lambda: _each(_own(pruning_trajectory_models()), "model"),
    "relevance": lambda: _each(relevance_checkpoints(), "model", "revision"),
    "covariates": lambda: _once(covariate_checkpoints()),
    "spans": lambda: _each(_own(span_checkpoints()), "model", "revision"),
    "heal": lambda: _once(heal_checkpoints()),
    "healed": lambda: _each(healed_checkpoints(), "model", "revision"),
    "scaling": lambda: _once(scaling_models()),
    "rope_counterfactual": lambda: _each(rope_counterfactual_models(), "model"),
    "jacobian": lambda: _once(jacobian_models()),
    "convergence": lambda: _once(convergence_models()),
    "domain_slices": lambda: _once(domain_slice_models()),
    "predictor_validity": lambda: _each(predictor_validity_models(), "model"),
}


def figure_instances(selection):
    return FIGURE_SELECTIONS[selection]()


def figure_targets():
    """The PNG and PDF of every registered figure the report gets (part of get_final_outputs)."""
    return [path for fig in registered_figures().values() for wildcards in figure_instances(fig.targets)
            for path in fig.outputs(**wildcards)]


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
