"""The protocol gap inside the block, as a study in one folder: per pair, the gap of the whole block, of its
attention sublayer and of its MLP sublayer, and how far the two sublayers' gaps fall short of the block's (the
interaction); per block, what deleting each sublayer costs, per parameter removed.

Here: its declaration (below), its job (``jobs.py``), its computation (``decompose.py``, numpy only) and its measurement (``run.py``), its rules
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. The sublayer variants are
the protocols of :mod:`swapkl.probes.protocols` (docs/engine.md says how each architecture is composed).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.study import Stage, Study, register_study, without_nulls


def _settings(params, wildcards) -> dict:
    """The windows: the section's own `data`, else the model's probe windows."""
    section = params.model_config(wildcards)["sublayers"]
    data = without_nulls(section["data"]) if section.get("data") else params.probe_data(wildcards)
    return dict(data=data, metadata=params.metadata(wildcards))


def _inputs(params, wildcards) -> dict:
    model = params.model_config(wildcards)
    return {"checkpoint": params.checkpoint_input(wildcards),
            "text": params.text_inputs(model["sublayers"]["data"] or model["data"])}


def _files(wildcards, output) -> dict:
    return {"out": output.gaps}


#: what each column of results/sublayer_gaps.parquet holds (docs/studies.md, the report's HTML view)
COLUMNS = {
    "model": "the model's name in the config", "revision": "the checkpoint's revision",
    "step": "the training step of a stepN revision", "n_layers": "blocks in the model",
    "kind": "gap (a pair's d_repl - d_inter), interaction (gap of the block - gap of the attention - gap of the "
            "MLP), deletion (KL of deleting the part of block layer_i) or deletion_per_mparam (that KL per million "
            "parameters removed)",
    "part": "block, attention (the attention sublayer with its norms) or mlp (the MLP sublayer with its norms)",
    "layer_i": "the pair's first block, or the block deleted", "layer_j": "the pair's second block (null: a deletion)",
    "d_repl": "gap rows: the larger KL of the two replacements (nats/token)",
    "d_inter": "gap rows: the KL of the interchange (nats/token)",
    "value": "the row's quantity (nats/token; per million parameters for deletion_per_mparam)",
    "ci_low": "95% percentile bootstrap interval over windows, low end (one resampling for every row)",
    "ci_high": "the interval's high end",
    "params": "deletion rows: the parameters of the part deleted", "n_windows": "windows measured",
    "n_tokens": "scored tokens",
}

STUDY = register_study(Study(
    name="sublayers", folder=Path(__file__).parent,
    stage=Stage("sublayers", SublayerJob, "swapkl.studies.sublayers.run:run_sublayers", "sublayers",
                ("out",), _settings),
    summary="the protocol gap of each pair split into its attention and MLP sublayers' gaps and their "
            "interaction; what deleting each sublayer costs per parameter",
    outputs={"gaps": "results/sublayers/{model}/{revision}.parquet"},
    tables={"sublayer_gaps": "sublayer_gaps_table.rst"},
    rules={"probe_sublayers": "checkpoint", "aggregate_sublayers": "once"},
    inputs=_inputs, files=_files, columns={"sublayer_gaps": COLUMNS},
))
