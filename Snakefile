# swapkl: replacement vs interchange KL probes over checkpoints, from config to figures and report.
# Wiring only: every computation is a call into the swapkl package (workflow/scripts/*.py).
#
#   snakemake --cores all                                  # the published study (config.yaml)
#   snakemake --workflow-profile profiles/demo             # the offline demo (config/demo.yaml instead)
#   snakemake --report report.html                         # figures with captions
#
# Local execution settings come from profiles/default (loaded automatically). A --configfile on the command
# line is merged into config.yaml; with --replace-workflow-config (as profiles/demo sets) it replaces it.

from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/config_text.smk"


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/offline.smk"
include: "workflow/rules/report.smk"


localrules:
    all,


onstart:
    check_hub_access(workflow.dag)
    follow_dag(log, logger.info, **job_estimates(workflow.dag))  # elapsed time and expected total, also in the log


rule all:
    input:
        get_final_outputs(),
    default_target: True


include: "workflow/rules/stamps.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/gguf.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/demo.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/answer.smk"
include: "workflow/rules/covariates.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/seeds.smk"
include: "workflow/rules/scorecard.smk"


# the studies kept in folders of swapkl.studies, each with its own rule file (swapkl.study.STUDIES)
for study in STUDIES.entries():

    include: study.rule_file
