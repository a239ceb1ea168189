# The embedded offline demo: an English corpus from Python's own docstrings, a BPE tokenizer trained on it,
# and tiny models trained from scratch whose step{N} checkpoints stand in for hub revisions.


#: the corpus files, which every demo job reads
DEMO_CORPUS = expand(os.path.join(DEMO_CORPUS_DIR, "{name}"), name=DEMO_CORPUS_FILES)


# The corpus (swapkl.demo.corpus) and the tokenizer trained on its train split (swapkl.demo.tokenizer).
rule prepare_demo_text:
    output:
        corpus=DEMO_CORPUS,
        tokenizer=directory(DEMO_TOKENIZER_DIR),
    params:
        corpus_dir=lambda wildcards, output: os.path.dirname(output.corpus[0]),
        settings=PARAMS.demo_text_settings(),
    log:
        "logs/demo/prepare_demo_text.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/prepare_demo_text.py"


rule train_demo_model:
    input:
        corpus=DEMO_CORPUS,
        tokenizer=DEMO_TOKENIZER_DIR,
    output:
        directory("resources/demo/models/{model}"),
    wildcard_constraints:
        model=name_regex(PLAN.models_with("demo")),
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input.corpus[0]),
        settings=PARAMS.demo_settings,
        save_steps=PARAMS.save_steps,
    log:
        "logs/{model}/train_demo_model.log",
    benchmark:
        "benchmarks/{model}/train_demo_model.tsv"
    # the longest jobs, and every probe waits for one: they start first (snakemake's scheduler otherwise picks
    # jobs with larger inputs first, and one training could run alone at the end of the DAG)
    priority: 2
    threads: 2
    resources:
        **trained_model_job(),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/train_demo_model.py"


# The demo's last-word task (LAMBADA-style, from the demo corpus), which a downstream section with `demo_tasks`
# scores (swapkl.studies.downstream).
rule build_demo_last_word:
    input:
        DEMO_CORPUS,
    output:
        DEMO_LAST_WORD_FILE,
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input[0]),
    log:
        "logs/demo/build_demo_last_word.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/build_demo_last_word.py"


# The demo's multiple-choice tasks (from the demo corpus), which relevance, downstream and task-pruning sections
# with `demo_tasks` score.
rule build_demo_tasks:
    input:
        DEMO_CORPUS,
    output:
        expand("resources/demo/tasks/{task}.{ext}", task=DEMO_TASKS, ext=("yaml", "jsonl")),
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(input[0]),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/demo/build_demo_tasks.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/build_demo_tasks.py"


# the demo tasks' training and test halves, which the task-calibrated pruning calibrates and evaluates on
# (swapkl.studies.task_pruning, `demo_tasks: true`)
rule split_demo_tasks:
    input:
        expand(f"{DEMO_DIR}/tasks/{{task}}.{{ext}}", task=DEMO_TASKS, ext=("yaml", "jsonl")),
    output:
        expand(f"{SPLIT_TASKS_DIR}/{{task}}{{ext}}", task=DEMO_TASKS, ext=(".yaml", "_train.jsonl", "_test.jsonl")),
    log:
        "logs/demo/split_demo_tasks.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/split_demo_tasks.py"
