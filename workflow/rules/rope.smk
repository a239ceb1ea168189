# The RoPE counterfactual: a `rope: off` model (probed with every rotary angle zero, base included) against
# the model whose weights it shares (rotary on), per adjacent pair, with the sign test
# (swapkl.studies.rope_counterfactual).


rule summarise_rope_counterfactual:
    input:
        table="results/swapkl.parquet",
    output:
        table_report("results/rope_counterfactual/{model}.parquet", "rope_counterfactual_table.rst"),
    wildcard_constraints:
        model=name_regex(PLAN.rope_counterfactual_models()),
    params:
        reference=lambda wildcards: config["models"][wildcards.model]["same_weights_as"],
        revision=lambda wildcards: PLAN.last_revision(wildcards.model),
        pairs=lambda wildcards: config["models"][wildcards.model].get("rope_pairs"),
    log:
        "logs/{model}/summarise_rope_counterfactual.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_rope_counterfactual.py"
