# Figures (PNG for the report, PDF for print): one plot_* rule per rule the figure registry names
# (swapkl.figures.figure_registry; each figure family swapkl.figures.<family> registers its entries, and a study
# folder of swapkl.studies its own), each drawing its figures with workflow/scripts/plot_figure.py. Captions:
# workflow/report/<figure>.rst, or the study folder's, rendered with the rule's params.

from swapkl.figures.figure_registry import FORMATS as FIGURE_EXTENSIONS, job_inputs as figure_job_inputs
from swapkl.figures.figure_registry import jobs as figure_jobs, output_key


# The workflow values a figure's params name (Figure.params: param name -> one of these), for its caption and
# (Figure.plot_params) its plot function.
FIGURE_PARAMS = {
    "model_setup": lambda wildcards: PARAMS.describe_setup(wildcards.model),
    "family_setup": lambda wildcards: PARAMS.describe_family(wildcards.family),
    "demo_training": lambda wildcards: PARAMS.describe_demo_training(),
    "pruning": lambda wildcards: PARAMS.describe_pruning(wildcards.model),
    "all_pruning": lambda wildcards: ", ".join(f"{m}: {PARAMS.describe_pruning(m)}" for m in PLAN.models_with_pruning()),
    "spans": lambda wildcards: PARAMS.describe_spans(wildcards.model),
    "n_boot": lambda wildcards: BOOTSTRAP["n_boot"],
    "rank_guide": lambda wildcards: "bi",  # the guide of the report's rank confusion (against deletion)
    "seed": lambda wildcards: BOOTSTRAP["seed"],
    "families": lambda wildcards: PLAN.seed_families(),
    "training_logs": lambda wildcards, input: {
        model: f"{run}/training_log.csv" for model, run in zip(PLAN.models_with("demo"), input.runs)
    },
}
# The models an input named in Figure.expand is expanded over.
FIGURE_EXPANSIONS = {"demo": lambda: PLAN.models_with("demo")}


def figure_inputs(figures):
    expansions = {name: how for fig in figures for name, how in fig.expand.items()}
    return {name: expand(pattern, model=FIGURE_EXPANSIONS[expansions[name]]()) if name in expansions else pattern
            for name, pattern in figure_job_inputs(figures).items()}


def figure_output(fig, ext):
    path = f"{fig.stem()}.{ext}"
    if ext != "png":
        return path
    return report(path, caption=fig.caption_path("../report"), category=section(fig.section),
                  subcategory=fig.subcategory, labels=fig.report_labels() or None)


def figure_constraints(fig):
    """For a constrained figure, its wildcards match only the instances the report gets."""
    if not fig.constrained:
        return {}
    instances = figure_instances(fig.targets)
    return {w: name_regex(sorted({i[w] for i in instances})) for w in fig.wildcards}


for _rule, _figures in figure_jobs().items():

    rule:
        name:
            _rule
        input:
            **figure_inputs(_figures),
        output:
            **{output_key(f, ext): figure_output(f, ext) for f in _figures for ext in FIGURE_EXTENSIONS},
        params:
            **{name: FIGURE_PARAMS[source] for f in _figures for name, source in f.params.items()},
        wildcard_constraints:
            **figure_constraints(_figures[0]),
        log:
            _figures[0].log_file(),
        conda:
            "../../envs/figures.yaml"
        script:
            "../scripts/plot_figure.py"
