# The content stamp of a checkpoint or text file that the workflow itself makes (a download, a GGUF conversion, the
# demo's text and training runs): written once the input exists, dated then. The stamps of inputs that exist when
# the workflow starts are kept up to date by common.smk (swapkl.config.input_stamps), so this rule runs only for
# an input made by this run, or one whose stamp was deleted.


rule stamp_input:
    input:
        stamped_input,
    output:
        f"{STAMP_DIR}/{{key}}.json",
    wildcard_constraints:
        key="[0-9a-f]{24}",
    log:
        "logs/stamp_input/{key}.log",
    localrule: True
    conda:
        "../../envs/figures.yaml"
    script:
        "../scripts/stamp_input.py"
