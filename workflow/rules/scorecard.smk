# The reproduction scorecard: every published number of the reproduced papers against swapkl's value, from
# whichever result tables this config produces (swapkl.paper.scorecard; rows of models not run say what they need).

from swapkl.config.task_pruning_plan import SUMMARY as TASK_PRUNING_SUMMARY, task_pruning_jobs


def scorecard_inputs():
    inputs = {"aggregate": "results/swapkl.parquet"}
    if prune_checkpoints():
        inputs.update(pruning="results/pruning.parquet", agreement="results/pruning_agreement.parquet")
    if relevance_checkpoints():
        inputs["relevance_stats"] = "results/relevance_stats.parquet"
    if rope_counterfactual_models():
        inputs["rope_counterfactual"] = [f"results/rope_counterfactual/{m}.parquet" for m in rope_counterfactual_models()]
    if heal_checkpoints():
        inputs["recovery"] = "results/recovery.parquet"
    if domain_slice_models():
        inputs["domain_slices"] = "results/domain_slices.parquet"
    if PLAN.downstream_checkpoints():
        inputs["downstream"] = "results/downstream.parquet"
    if task_pruning_jobs(PLAN):
        inputs["seed003_tables"] = TASK_PRUNING_SUMMARY
    return inputs


rule summarise_scorecard:
    input:
        **scorecard_inputs(),
    output:
        table="results/paper_scorecard.parquet",
        html=report(
            "results/paper_scorecard.html",
            caption="../report/paper_scorecard.rst",
            category=section("scorecard"),
        ),
    log:
        "logs/summarise_scorecard.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_scorecard.py"
