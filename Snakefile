# swapkl: replacement vs interchange KL probes over checkpoints, from config to figures and report.
# Wiring only: every computation is a call into the swapkl package (workflow/scripts/*.py).
#
#   snakemake --cores all                                  # the published study (config/config.yaml)
#   snakemake --cores all --configfile config/demo.yaml    # the offline demo (replaces the study config)
#   snakemake --report report.html                         # figures with captions
#
# Local execution settings come from profiles/default (loaded automatically).

from snakemake.utils import min_version

min_version("9.0")


# A --configfile on the command line replaces the study config instead of being merged into it.
if not config:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


localrules:
    all,


rule all:
    input:
        get_final_outputs(),
    default_target: True


include: "workflow/rules/download.smk"
include: "workflow/rules/demo.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/prune.smk"
include: "workflow/rules/relevance.smk"
include: "workflow/rules/export.smk"
include: "workflow/rules/figures.smk"
