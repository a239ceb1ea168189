"""The CLI's defaults are the workflow's: an option of `swapkl probe` / `swapkl prune` that the config
schema also sets has the schema's default, so a result does not depend on which of the two ran it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from swapkl.cli import build_parser

SCHEMA = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
DEFS = SCHEMA["$defs"]


def schema_default(definition: str, field: str):
    return DEFS[definition]["properties"][field]["default"]


PROBE_ARGS = ["probe", "--model", "m", "--out", "o.parquet"]
SPANS_ARGS = ["spans", "--model", "m", "--out", "o.parquet"]
PRUNE_ARGS = ["prune", "--model", "m", "--probe", "p.parquet", "--out", "o.parquet"]

CASES = [
    # (command line, CLI attribute, schema definition, field, how the schema value maps to the CLI value)
    (PROBE_ARGS, "dtype", "model", "dtype", None),
    (PROBE_ARGS, "batch_size", "model", "batch_size", None),
    (PROBE_ARGS, "pairs", "model", "pair_sets", lambda sets: ",".join(sets)),
    (PRUNE_ARGS, "n_random", "prune", "n_random", None),
    (PRUNE_ARGS, "spacing", "prune", "spacing", None),
    (PRUNE_ARGS, "seed", "prune", "seed", None),
    (PRUNE_ARGS, "budgets", "prune", "max_budget", lambda n: list(range(1, n + 1))),
    (PRUNE_ARGS, "eval_window", "perplexity_text", "window", None),
    (PRUNE_ARGS, "eval_stride", "perplexity_text", "stride", None),
    (PRUNE_ARGS, "eval_max_words", "perplexity_text", "max_words", None),
    (PRUNE_ARGS, "eval_split", "perplexity_text", "split", None),
    (PRUNE_ARGS, "eval_text_prep", "perplexity_text", "text_prep", None),
    (PRUNE_ARGS, "compute_dtype", "prune", "compute_dtype", None),
    (PRUNE_ARGS, "rope_scaling", "model", "rope_scaling", None),
    (PROBE_ARGS, "rope_scaling", "model", "rope_scaling", None),
    (SPANS_ARGS, "variants", "spans", "variants", lambda names: ",".join(names)),
    (SPANS_ARGS, "loops", "spans", "loops", None),
    (SPANS_ARGS, "span_seed", "spans", "seed", None),
    (SPANS_ARGS, "min_start", "spans", "min_start", None),
    (SPANS_ARGS, "min_width", "spans", "min_width", None),
    (PROBE_ARGS, "device_map", "model", "device_map", None),
    (PROBE_ARGS, "max_memory", "model", "max_memory", None),
]


@pytest.mark.parametrize("argv, attr, definition, field, convert", CASES, ids=[f"{c[0][0]}-{c[1]}" for c in CASES])
def test_cli_default_is_the_schema_default(argv, attr, definition, field, convert):
    args = build_parser().parse_args(argv)
    expected = schema_default(definition, field)
    if convert is not None:
        expected = convert(expected)
    assert getattr(args, attr) == expected


@pytest.mark.parametrize("field", ["n_seqs", "seq_len", "min_tokens", "split", "seed", "text_format", "padding",
                                   "pad_token", "selection"])
def test_cli_window_defaults_are_the_schema_defaults(field):
    """The data options default to None on the command line (so an option that the chosen source ignores can be
    refused); the DataSpec they build takes the schema's defaults."""
    from swapkl.commands.probe_command import data_spec

    args = build_parser().parse_args(PROBE_ARGS + ["--dataset", "wikitext"])
    assert getattr(data_spec(args), field) == schema_default("windows", field)


def test_bootstrap_defaults_are_the_probe_sections():
    """The bootstrap settings belong to the aggregation commands (the CIs are computed there, not by the
    probe or pruning runs, which take no bootstrap option)."""
    probe = SCHEMA["properties"]["probe"]["properties"]
    agg = build_parser().parse_args(["aggregate", "--probe", "p.parquet", "--pair-sets", "m=adjacent", "--out", "o"])
    assert (agg.bootstrap, agg.bootstrap_seed) == (probe["n_boot"]["default"], probe["seed"]["default"])
    pruning = build_parser().parse_args(["aggregate-pruning", "--inputs", "p.parquet", "--out", "o.parquet"])
    assert pruning.bootstrap == probe["n_boot"]["default"]
    for argv in (PROBE_ARGS, PRUNE_ARGS):
        assert not hasattr(build_parser().parse_args(argv), "bootstrap")


@pytest.mark.parametrize("name", ["n_random", "spacing", "seed", "angular_metric", "budgets", "dtype", "batch_size"])
def test_python_defaults_of_run_pruning_are_the_cli_defaults(name):
    """`swapkl prune` and a Python call of run_pruning without the option measure the same thing."""
    import inspect

    from swapkl.pruning.prune import run_pruning

    default = inspect.signature(run_pruning).parameters[name].default
    cli = getattr(build_parser().parse_args(PRUNE_ARGS), name)
    assert (list(default) if name == "budgets" else default) == cli


def test_calibration_split_default_is_the_workflows():
    from swapkl.commands.arguments import data_spec

    args = build_parser().parse_args(PRUNE_ARGS + ["--calib-dataset", "wikitext"])
    workflow = DEFS["prune"]["properties"]["calibration"]["default"]["split"]
    assert data_spec(args, "calib-").split == workflow == "train"
