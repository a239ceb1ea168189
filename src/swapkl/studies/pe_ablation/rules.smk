# The controlled position-encoding ablation, the rules of the study's folder (swapkl.studies.pe_ablation; the
# config's top-level `pe_ablation` section): one architecture-matched model per (encoding, depth) trained from
# scratch on the demo corpus (or on the text that rule prepare_pe_text downloads and prepares from the section's
# `train_text`), each probed with replacement and interchange on every pair within max_distance, summarised as
# the I/R ratio by pair distance (swapkl.studies.pe_ablation.summary).

from swapkl.layout import TRAINING_TEXT_FILES
from swapkl.studies.pe_ablation.models import (PE_TEXT_DIR, PE_TOKENIZER_DIR, pe_gpu, pe_max_distance, pe_models,
                                               pe_probe_data, pe_probe_file, pe_run_dir, pe_summary_models,
                                               pe_text_inputs, pe_text_mem_mb, pe_train_minutes, pe_train_settings,
                                               pe_training_text)

#: a GPU for each training and probe job when the block trains on `cuda`
PE_GPU = pe_gpu(config)
#: the training text and tokenizer every training job reads
PE_TEXT = pe_text_inputs(config)


localrules:
    prepare_pe_text,


# Downloads the dataset and the tokenizer (the hub's cache, or HF_HUB_OFFLINE=1 with a filled cache) and cuts the
# training text at `max_tokens`; runs where the network is, like download_checkpoint.
rule prepare_pe_text:
    input:
        text_files(pe_training_text(config) or {}),
    output:
        corpus=[f"{PE_TEXT_DIR}/{name}" for name in TRAINING_TEXT_FILES],
        tokenizer=directory(PE_TOKENIZER_DIR),
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.corpus[0]),
        source=pe_training_text(config),
    log:
        "logs/pe_ablation/prepare_pe_text.log",
    benchmark:
        "benchmarks/pe_ablation/prepare_pe_text.tsv"
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("prepare_pe_text.py")


rule train_pe_model:
    input:
        corpus=PE_TEXT["corpus"],
        tokenizer=PE_TEXT["tokenizer"],
    output:
        directory(pe_run_dir("{pe_model}")),
    wildcard_constraints:
        pe_model=name_regex(pe_models(config)),
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input.corpus[0]),
        settings=lambda wildcards: pe_train_settings(config, wildcards.pe_model),
    log:
        "logs/pe_ablation/{pe_model}/train_pe_model.log",
    benchmark:
        "benchmarks/pe_ablation/{pe_model}/train_pe_model.tsv"
    priority: 1  # after the demo trainings (train_demo_model), before the jobs that wait on neither
    threads: 1
    resources:
        **trained_model_job(pe_train_minutes(config), pe_text_mem_mb(config), **PE_GPU),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("train_pe_model.py")


rule probe_pe_model:
    input:
        checkpoint=pe_run_dir("{pe_model}"),
        text=text_files(pe_probe_data(config)),
    output:
        pe_probe_file("{pe_model}"),
    wildcard_constraints:
        pe_model=name_regex(pe_models(config)),
    params:
        job=PARAMS.job("pe_probe"),
        files=lambda wildcards, output: {"out": output[0]},
    log:
        "logs/pe_ablation/{pe_model}/probe_pe_model.log",
    benchmark:
        "benchmarks/pe_ablation/{pe_model}/probe_pe_model.tsv"
    threads: 1
    resources:
        **trained_model_job(**PE_GPU),
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("run_job.py")


rule summarise_pe_ablation:
    input:
        probes=[pe_probe_file(label) for label in pe_models(config)],
        runs=[pe_run_dir(label) for label in pe_models(config)],
    output:
        table_report("results/pe_ablation.parquet", STUDIES["pe_ablation"].caption("pe_ablation")),
    params:
        models=pe_summary_models(config),
        max_distance=pe_max_distance(config),
    log:
        "logs/summarise_pe_ablation.log",
    conda:
        workflow_env("torch.yaml")
    script:
        workflow_script("summarise_pe_ablation.py")
