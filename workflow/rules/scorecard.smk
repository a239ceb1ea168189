# The reproduction scorecard: every published number of the reproduced papers against swapkl's value, from
# whichever result tables this config produces (swapkl.paper.scorecard; rows of models not run say what they need).
# A section of the report where the run reproduces a published number, else among the tables.


rule summarise_scorecard:
    input:
        **scorecard_inputs(),
    output:
        table="results/paper_scorecard.parquet",
        html=report(
            "results/paper_scorecard.html",
            caption="../report/paper_scorecard.rst",
            category=section("scorecard" if "scorecard" in NUMBERED_SECTIONS else "tables"),
        ),
    log:
        "logs/summarise_scorecard.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_scorecard.py"
