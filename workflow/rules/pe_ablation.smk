# The controlled position-encoding ablation (config block `pe_ablation`, swapkl.config.ablation_models): one
# architecture-matched model per (encoding, depth) trained from scratch on the demo corpus, each probed with
# replacement and interchange on every pair within max_distance, summarised as the I/R ratio by pair distance
# (swapkl.studies.pe_ablation).

from swapkl.config.ablation_models import (PE_PROTOCOLS, pe_checkpoint, pe_metadata, pe_models, pe_pairs,
                                           pe_probe_data, pe_probe_file, pe_run_dir, pe_summary_models,
                                           pe_train_settings)

#: a GPU for each training and probe job when the block trains on `cuda`
PE_GPU = {"gpu": 1} if config["pe_ablation"]["device"] == "cuda" else {}


rule train_pe_model:
    input:
        corpus=DEMO_CORPUS,
        tokenizer="resources/demo/tokenizer",
    output:
        directory(pe_run_dir("{pe_model}")),
    wildcard_constraints:
        pe_model=name_regex(pe_models(config)),
    params:
        corpus_dir=DEMO_CORPUS_DIR,
        settings=lambda wildcards: pe_train_settings(config, wildcards.pe_model),
    log:
        "logs/pe_ablation/{pe_model}/train_pe_model.log",
    benchmark:
        "benchmarks/pe_ablation/{pe_model}/train_pe_model.tsv"
    threads: 1
    resources:
        **PE_GPU,
        mem_mb=4000,
        runtime=60 + config["pe_ablation"]["steps"] // 100,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/train_pe_model.py"


rule probe_pe_model:
    input:
        checkpoint=pe_run_dir("{pe_model}"),
        text=text_files(config["pe_ablation"]["data"]),
    output:
        pe_probe_file("{pe_model}"),
    wildcard_constraints:
        pe_model=name_regex(pe_models(config)),
    params:
        checkpoint=lambda wildcards: pe_checkpoint(config, wildcards.pe_model),
        protocols=list(PE_PROTOCOLS),
        pairs=pe_pairs(config),
        data=pe_probe_data(config),
        metadata=lambda wildcards: pe_metadata(config, wildcards.pe_model),
    log:
        "logs/pe_ablation/{pe_model}/probe_pe_model.log",
    benchmark:
        "benchmarks/pe_ablation/{pe_model}/probe_pe_model.tsv"
    threads: 1
    resources:
        **PE_GPU,
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/probe_pe_model.py"


rule summarise_pe_ablation:
    input:
        probes=[pe_probe_file(label) for label in pe_models(config)],
        runs=[pe_run_dir(label) for label in pe_models(config)],
    output:
        table_report("results/pe_ablation.parquet", "pe_ablation_table.rst"),
    params:
        models=pe_summary_models(config),
        max_distance=config["pe_ablation"]["max_distance"],
    log:
        "logs/summarise_pe_ablation.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/summarise_pe_ablation.py"
