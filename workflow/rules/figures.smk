# Figures (PNG for the report, PDF for print), drawn by swapkl.figures from the aggregate tables. Each PNG
# goes into `snakemake --report` with a caption rendered from the config (workflow/report/*.rst).


rule plot_gap_trajectory:
    input:
        table="results/swapkl.parquet",
    output:
        png=report(
            "results/figures/gap_trajectory/{model}.png",
            caption="../report/gap_trajectory.rst",
            category=section("gap"),
            labels={"model": "{model}"},
        ),
        pdf="results/figures/gap_trajectory/{model}.pdf",
        png_fwd=report(
            "results/figures/gap_trajectory_fwd/{model}.png",
            caption="../report/gap_trajectory_fwd.rst",
            category=section("gap"),
            labels={"model": "{model}", "replacement": "one direction"},
        ),
        pdf_fwd="results/figures/gap_trajectory_fwd/{model}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
    log:
        "logs/{model}/plot_gap_trajectory.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_gap_trajectory.py"


rule plot_ratio_by_distance:
    input:
        table="results/swapkl.parquet",
    output:
        png=report(
            "results/figures/ratio_by_distance/{model}.png",
            caption="../report/ratio_by_distance.rst",
            category=section("ratio"),
            labels={"model": "{model}"},
        ),
        pdf="results/figures/ratio_by_distance/{model}.pdf",
        png_fwd=report(
            "results/figures/ratio_by_distance_fwd/{model}.png",
            caption="../report/ratio_by_distance_fwd.rst",
            category=section("ratio"),
            labels={"model": "{model}", "replacement": "one direction"},
        ),
        pdf_fwd="results/figures/ratio_by_distance_fwd/{model}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
    log:
        "logs/{model}/plot_ratio_by_distance.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_ratio_by_distance.py"


rule plot_heatmaps:
    input:
        table="results/swapkl.parquet",
    output:
        png=report(
            "results/figures/heatmaps/{model}/{revision}.png",
            caption="../report/heatmaps.rst",
            category=section("heatmaps"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}"},
        ),
        pdf="results/figures/heatmaps/{model}/{revision}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
    log:
        "logs/{model}/{revision}/plot_heatmaps.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_heatmaps.py"


rule plot_deletion_vs_bi:
    input:
        table="results/swapkl.parquet",
    output:
        png=report(
            "results/figures/deletion_vs_bi/{model}/{revision}.png",
            caption="../report/deletion_vs_bi.rst",
            category=section("deletion"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}"},
        ),
        pdf="results/figures/deletion_vs_bi/{model}/{revision}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
    log:
        "logs/{model}/{revision}/plot_deletion_vs_bi.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_deletion_vs_bi.py"


rule plot_training_curves:
    input:
        runs=expand("resources/demo/models/{model}", model=models_with("demo")),
    output:
        png=report(
            "results/figures/training_curves.png",
            caption="../report/training_curves.rst",
            category=section("demo"),
        ),
        pdf="results/figures/training_curves.pdf",
    params:
        training_logs=lambda wildcards, input: {
            model: f"{run}/training_log.csv" for model, run in zip(models_with("demo"), input.runs)
        },
        setup=describe_demo_training(),
    log:
        "logs/demo/plot_training_curves.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_training_curves.py"


rule plot_pruning_cost:
    input:
        table="results/pruning.parquet",
    output:
        png=report(
            "results/figures/pruning_cost/{model}/{revision}.png",
            caption="../report/pruning_cost.rst",
            category=section("pruning"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}"},
        ),
        pdf="results/figures/pruning_cost/{model}/{revision}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
        prune=lambda wildcards: describe_pruning(wildcards.model),
    log:
        "logs/{model}/{revision}/plot_pruning_cost.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_pruning_cost.py"


rule plot_pruning_agreement:
    input:
        table="results/pruning_agreement.parquet",
    output:
        png=report(
            "results/figures/pruning_agreement/{model}/{revision}.png",
            caption="../report/pruning_agreement.rst",
            category=section("agreement"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}"},
        ),
        pdf="results/figures/pruning_agreement/{model}/{revision}.pdf",
        confusion_png=report(
            "results/figures/rank_confusion/{model}/{revision}.png",
            caption="../report/rank_confusion.rst",
            category=section("agreement"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}", "figure": "rank confusion"},
        ),
        confusion_pdf="results/figures/rank_confusion/{model}/{revision}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
        prune=lambda wildcards: describe_pruning(wildcards.model),
    log:
        "logs/{model}/{revision}/plot_pruning_agreement.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_pruning_agreement.py"


rule plot_pruning_ratio:
    input:
        table="results/pruning.parquet",
    output:
        png=report(
            "results/figures/pruning_ratio.png",
            caption="../report/pruning_ratio.rst",
            category=section("pruning"),
            subcategory="All models",
        ),
        pdf="results/figures/pruning_ratio.pdf",
    params:
        prune=", ".join(f"{model}: {describe_pruning(model)}" for model in models_with_pruning()),
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
    log:
        "logs/plot_pruning_ratio.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_pruning_ratio.py"


rule plot_pruning_trajectory:
    input:
        table="results/pruning.parquet",
    output:
        png=report(
            "results/figures/pruning_trajectory/{model}.png",
            caption="../report/pruning_trajectory.rst",
            category=section("pruning"),
            subcategory="{model}",
            labels={"model": "{model}"},
        ),
        pdf="results/figures/pruning_trajectory/{model}.pdf",
    params:
        prune=lambda wildcards: describe_pruning(wildcards.model),
        n_boot=config["probe"]["n_boot"],
        seed=config["probe"]["seed"],
    log:
        "logs/{model}/plot_pruning_trajectory.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_pruning_trajectory.py"


rule plot_weight_protocols:
    input:
        table="results/swapkl.parquet",
    output:
        png=report(
            "results/figures/weight_protocols/{model}/{revision}.png",
            caption="../report/weight_protocols.rst",
            category=section("weights"),
            subcategory="{model}",
            labels={"model": "{model}", "revision": "{revision}"},
        ),
        pdf="results/figures/weight_protocols/{model}/{revision}.pdf",
    params:
        setup=lambda wildcards: describe_setup(wildcards.model),
    log:
        "logs/{model}/{revision}/plot_weight_protocols.log",
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/plot_weight_protocols.py"
