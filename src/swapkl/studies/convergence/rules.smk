# Prompt-set convergence, the rule of the study's folder (swapkl.studies.convergence): from the replacement and
# interchange probes' stored per-window sums (no forward pass) of every checkpoint its section chooses (by default
# each model's last revision), one table.

from swapkl.studies.convergence import PROTOCOLS as CONVERGENCE_PROTOCOLS


rule summarise_convergence:
    input:
        [probe_file(m, r, p) for m, r in PLAN.stage_checkpoints("convergence") for p in CONVERGENCE_PROTOCOLS],
    output:
        table_report("results/convergence.parquet", STUDIES["convergence"].caption("convergence")),
    params:
        checkpoints=[[m, r, [probe_file(m, r, p) for p in CONVERGENCE_PROTOCOLS]]
                     for m, r in PLAN.stage_checkpoints("convergence")],
        seed=BOOTSTRAP["seed"],
    log:
        "logs/summarise_convergence.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_convergence.py")
