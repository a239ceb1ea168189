# The report's opening page per pruned model (swapkl.tables.answer_page): which blocks each guide removes at each
# budget, at what perplexity cost with its interval, which guide is cheapest and whether that is decided, how
# stable the sets are on the sequential probe's windows, the sections of the studies that say something there (the
# sublayers study: sublayer against block pruning), and the model's main figures at full width.


rule summarise_answer:
    input:
        unpack(PARAMS.answer_inputs),
    output:
        report(
            "results/answer/{model}.html",
            caption="../report/answer.rst",
            category=section("answer"),
            labels={"model": "{model}"},
        ),
    params:
        captions=lambda wildcards: [caption for _, caption in PARAMS.answer_figures(wildcards.model)],
        sections=lambda wildcards: PARAMS.answer_sections(wildcards.model),
    wildcard_constraints:
        model=name_regex(PLAN.answer_models()),
    log:
        "logs/{model}/summarise_answer.log",
    resources:
        **TABLE_JOB,
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/summarise_answer.py"
