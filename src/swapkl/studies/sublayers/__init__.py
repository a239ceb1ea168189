"""The protocol gap inside the block, as a study in one folder: per pair, the gap of the whole block, of its
attention sublayer and of its MLP sublayer, and how far the two sublayers' gaps fall short of the block's (the
interaction); per block, what deleting each sublayer costs, per parameter removed; and, with budgets, pruning
below the block against pruning whole blocks at the same parameter budget.

Here: its declaration (below), its job (``jobs.py``), its statistics (``stats.py``: the decomposition and the
pruning below the block, numpy only) and its measurement (``run.py``), its rules (``rules.smk``), its config
section's schema (``schema.yaml``) and its tables' captions. Its figure is the family
:mod:`swapkl.figures.sublayers`, and the statements a run supports (its section of the answer page)
:mod:`swapkl.figures.sublayer_statements`: a study folder imports its runner by
name (``run.py``: torch), so a figure registered here would put torch into the figure jobs' environment. The
sublayer variants are
the protocols of :mod:`swapkl.probes.protocols` (docs/engine.md says how each architecture is composed).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.study import Stage, Study, register_study, without_nulls


def _eval_text(model: dict) -> dict:
    """The evaluation text of the sublayer pruning: the section's own `eval`, else the model's pruning text."""
    return without_nulls(model["sublayers"]["eval"] or model["prune"]["eval"])


def _settings(params, wildcards) -> dict:
    """The windows (the section's own `data`, else the model's probe windows), the evaluation text and the
    pruning's spacing."""
    model = params.model_config(wildcards)
    section = model["sublayers"]
    data = without_nulls(section["data"]) if section.get("data") else params.probe_data(wildcards)
    return dict(data=data, metadata=params.metadata(wildcards), eval_data=_eval_text(model),
                spacing=model["prune"]["spacing"])


def _inputs(params, wildcards) -> dict:
    model = params.model_config(wildcards)
    texts = [model["sublayers"]["data"] or model["data"]] + ([_eval_text(model)] if model["sublayers"]["budgets"]
                                                             else [])
    return {"checkpoint": params.checkpoint_input(wildcards), "text": params.text_inputs(*texts)}


def _files(wildcards, output) -> dict:
    return {"out": output.gaps, "pruning_out": output.pruning}


#: what each column of results/sublayer_gaps.parquet holds (docs/studies.md, the report's HTML view)
COLUMNS = {
    "model": "the model's name in the config", "revision": "the checkpoint's revision",
    "step": "the training step of a stepN revision", "n_layers": "blocks in the model",
    "kind": "gap (a pair's d_repl - d_inter), interaction (gap of the block - gap of the attention - gap of the "
            "MLP), deletion (KL of deleting the part of block layer_i), deletion_per_mparam (that KL per million "
            "parameters removed); over all pairs (layer_i null): mean_gap (the part's mean gap), mean_interaction, "
            "share (the sublayer's mean gap / the block's) and mlp_minus_attention (the MLP's mean gap - the "
            "attention's)",
    "part": "block, attention (the attention sublayer with its norms) or mlp (the MLP sublayer with its norms)",
    "layer_i": "the pair's first block, or the block deleted (null: a mean over all pairs)", "layer_j": "the pair's second block (null: a deletion)",
    "d_repl": "gap rows: the larger KL of the two replacements (nats/token)",
    "d_inter": "gap rows: the KL of the interchange (nats/token)",
    "value": "the row's quantity (nats/token; per million parameters for deletion_per_mparam; a fraction for share)",
    "ci_low": "95% percentile bootstrap interval over windows, low end (one resampling for every row)",
    "ci_high": "the interval's high end",
    "params": "deletion rows: the parameters of the part deleted", "n_windows": "windows measured",
    "n_tokens": "scored tokens",
}

#: what each column of results/sublayer_pruning.parquet holds
PRUNING_COLUMNS = {
    "model": "the model's name in the config", "revision": "the checkpoint's revision",
    "step": "the training step of a stepN revision", "n_layers": "blocks in the model",
    "kind": "cost (the row's set against the unpruned model) or difference (the sublayer guide's cost minus the "
            "block guide `versus`'s, at the same budget)",
    "guide": "interchange, replacement_max, deletion (blocks, static greedy with the pruning's spacing), "
             "sublayer_deletion or sublayer_interchange (sublayers, cheapest score per parameter first)",
    "versus": "difference rows: the block guide compared with (null: a cost row)",
    "budget": "blocks removed by the block guides; the sublayer guides get their parameters",
    "feasible": "false where the block greedy could not reach the budget (costs NaN)",
    "removed": "what the set removes: a block (\"3\") or a sublayer (\"3.attention\", \"5.mlp\")",
    "removed_params": "parameters removed (at most param_budget)",
    "param_budget": "budget x the parameters of one block",
    "ppl": "perplexity of the pruned model on the evaluation text", "base_ppl": "perplexity of the unpruned model",
    "value": "cost rows: 100 (ppl / base_ppl - 1), in %; difference rows: the two costs' difference, in points",
    "ci_low": "95% percentile bootstrap interval over evaluation windows, paired within a checkpoint, low end",
    "ci_high": "the interval's high end",
    "n_windows": "evaluation windows", "n_tokens": "scored evaluation tokens",
}

STUDY = register_study(Study(
    name="sublayers", folder=Path(__file__).parent,
    stage=Stage("sublayers", SublayerJob, "swapkl.studies.sublayers.run:run_sublayers", "sublayers",
                ("out", "pruning_out"), _settings),
    summary="the protocol gap of each pair split into its attention and MLP sublayers' gaps and their "
            "interaction; what deleting each sublayer costs per parameter; sublayer against block pruning",
    outputs={"gaps": "results/sublayers/{model}/{revision}.parquet",
             "pruning": "results/sublayers/{model}/{revision}.pruning.parquet"},
    tables={"sublayer_gaps": "sublayer_gaps_table.rst", "sublayer_pruning": "sublayer_pruning_table.rst"},
    rules={"probe_sublayers": "checkpoint", "aggregate_sublayers": "once", "aggregate_sublayer_pruning": "once"},
    inputs=_inputs, files=_files, columns={"sublayer_gaps": COLUMNS, "sublayer_pruning": PRUNING_COLUMNS},
    figures="model",
    answer="swapkl.figures.sublayer_statements:answer_section",
    defaults=tuple((key, SublayerJob, key) for key in ("pairs", "n_boot", "seed", "budgets")),
))

