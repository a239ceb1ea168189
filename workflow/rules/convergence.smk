# Prompt-set convergence from the probes' stored per-sequence sums (no forward pass; swapkl.studies.convergence), for
# every model marked `convergence: true`, at its last revision.


rule summarise_convergence:
    input:
        lambda wildcards: [probe_file(m, PLAN.last_revision(m), p) for m in PLAN.convergence_models()
                           for p in ("replacement", "interchange")],
    output:
        table_report("results/convergence.parquet", "convergence_table.rst"),
    params:
        checkpoints=[[m, PLAN.last_revision(m), [probe_file(m, PLAN.last_revision(m), p) for p in ("replacement", "interchange")]]
                     for m in PLAN.convergence_models()],
        seed=config["probe"]["seed"],
    log:
        "logs/summarise_convergence.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_convergence.py"
