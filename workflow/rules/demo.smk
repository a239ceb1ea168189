# The embedded offline demo: an English corpus from Python's own docstrings, a BPE tokenizer trained on it,
# and tiny models trained from scratch whose step{N} checkpoints stand in for hub revisions.


#: the corpus folder and its files, which every demo job reads
DEMO_CORPUS_DIR = os.path.join(DEMO_DIR, "corpus")
DEMO_CORPUS = expand(os.path.join(DEMO_CORPUS_DIR, "{name}"), name=DEMO_CORPUS_FILES)


rule build_demo_corpus:
    output:
        DEMO_CORPUS,
    params:
        out_dir=DEMO_CORPUS_DIR,
        settings=canonical(config["demo"]["corpus"]),
    log:
        "logs/demo/build_demo_corpus.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/build_demo_corpus.py"


rule train_demo_tokenizer:
    input:
        DEMO_CORPUS,
    output:
        directory("resources/demo/tokenizer"),
    params:
        corpus_dir=DEMO_CORPUS_DIR,
        settings=canonical(config["demo"]["tokenizer"]),
    log:
        "logs/demo/train_demo_tokenizer.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/train_demo_tokenizer.py"


rule train_demo_model:
    input:
        corpus=DEMO_CORPUS,
        tokenizer="resources/demo/tokenizer",
    output:
        directory("resources/demo/models/{model}"),
    wildcard_constraints:
        model=name_regex(models_with("demo")),
    params:
        corpus_dir=DEMO_CORPUS_DIR,
        settings=get_demo_settings,
        save_steps=get_save_steps,
    log:
        "logs/{model}/train_demo_model.log",
    benchmark:
        "benchmarks/{model}/train_demo_model.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/train_demo_model.py"
