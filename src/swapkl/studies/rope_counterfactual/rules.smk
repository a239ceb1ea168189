# The RoPE counterfactual, the rule of the study's folder (swapkl.studies.rope_counterfactual): every checkpoint of
# a `rope: "off"` model with `rope_counterfactual.enabled` (by default its last revision) against the model whose
# weights it shares, from the aggregate, into one table.

from swapkl.studies.rope_counterfactual import comparisons as rope_comparisons


rule summarise_rope_counterfactual:
    input:
        table="results/swapkl.parquet",
    output:
        table_report("results/rope_counterfactual.parquet", STUDIES["rope_counterfactual"].caption("rope_counterfactual")),
    params:
        comparisons=rope_comparisons(PLAN),
    log:
        "logs/summarise_rope_counterfactual.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_rope_counterfactual.py")
