# The published study's prompt lists, extracted from its public code at a pinned commit (swapkl.paper.prompt_lists):
# downloaded from raw GitHub URLs, or read from the local clone named by `paper: {repo: PATH}` (offline
# clusters). The paper entries of config.yaml name these files as their probe text, so their probes wait for it.


localrules:
    fetch_paper_inputs,


rule fetch_paper_inputs:
    output:
        llama_prompts_100="resources/paper/llama_prompts_100.jsonl",
        pythia_prompts_32="resources/paper/pythia_prompts_32.jsonl",
        gpt2_merge_prompts_50="resources/paper/gpt2_merge_prompts_50.jsonl",
        gpt2_pair_prompts_200="resources/paper/gpt2_pair_prompts_200.jsonl",
        gpt2_head_prompts_20="resources/paper/gpt2_head_prompts_20.jsonl",
    params:
        repo=PARAMS.paper_repo,
    log:
        "logs/fetch_paper_inputs.log",
    conda:
        "../../envs/download.yaml"
    script:
        "../scripts/fetch_paper_inputs.py"
