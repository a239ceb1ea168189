"""The catalogue of bad inputs (docs/bad_inputs.md): each one gives one exact error line naming
the culprit, a non-zero exit and no output file.

CLI rows run ``swapkl.cli.main`` in-process and compare the ``swapkl: error:`` line of stderr
exactly (exit code 2). Config rows run ``snakemake --dry-run --replace-workflow-config --configfile BAD.yaml`` from the
repository root and compare its ``Invalid config:`` line (exit code 1). The table in
docs/bad_inputs.md is checked against the templates here, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

from swapkl import cli
from swapkl.data import DataSpec
from swapkl.errors import SwapKLError
from swapkl.probe import run_probe
from test_perplexity import char_tokenizer
from tiny_models import random_tokens, tiny_model

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "bad_inputs.md"
N_LAYERS = 4  # tiny model: 4 blocks, vocabulary 97, 64 positions
PARAGRAPH = "the quick brown fox jumps over the lazy dog and keeps running"


# ----------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A good tiny checkpoint (with a character tokenizer), good token windows and good text."""
    root = tmp_path_factory.mktemp("bad_inputs")
    model = root / "model"
    tiny_model("gpt_neox", n_layers=N_LAYERS).save_pretrained(model)
    char_tokenizer().save_pretrained(model)
    tokens = root / "tokens.npy"
    np.save(tokens, random_tokens(97, 4, 12).numpy())
    text = root / "text.txt"
    text.write_text("\n\n".join(f"{PARAGRAPH} {k}" for k in range(6)))
    return SimpleNamespace(root=root, model=str(model), tokens=str(tokens), text=str(text))


def probe_args(model, out, *extra, data=None):
    data = data if data is not None else []
    return ["probe", "--model", str(model), *data, "--bootstrap", "10", "--out", str(out), *extra]


def copy_model(env, folder: Path) -> Path:
    shutil.copytree(env.model, folder)
    return folder


# ----------------------------------------------------------------------------------------- CLI cases
# Each case prepares its inputs in ``d`` and returns (argv, values for the message template).


def case_missing_checkpoint(env, d):
    missing = d / "no-such-checkpoint"
    return probe_args(missing, d / "out.parquet", data=["--tokens", env.tokens]), {"model": missing}


def case_not_a_checkpoint(env, d):
    folder = d / "empty-dir"
    folder.mkdir()
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_local_revision_missing(env, d):
    models = d / "models"
    copy_model(env, models / "step0")
    argv = probe_args(models, d / "out.parquet", "--revision", "step999", data=["--tokens", env.tokens])
    return argv, {"models": models}


def case_no_adapter(env, d):
    folder = d / "gpt2"
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=97, n_positions=64)).save_pretrained(folder)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_seq_len_beyond_positions(env, d):
    tokens = d / "long.npy"
    np.save(tokens, random_tokens(97, 2, 80).numpy())
    return probe_args(env.model, d / "out.parquet", data=["--tokens", str(tokens)]), {}


def case_text_seq_len_beyond_positions(env, d):
    argv = probe_args(env.model, d / "out.parquet",
                      data=["--text-file", env.text, "--n-seqs", "2", "--seq-len", "65", "--min-tokens", "4"])
    return argv, {}


def case_token_beyond_vocab(env, d):
    tokens = d / "tokens.npy"
    arr = random_tokens(97, 2, 12).numpy()
    arr[1, 5] = 97
    np.save(tokens, arr)
    return probe_args(env.model, d / "out.parquet", data=["--tokens", str(tokens)]), {"tokens": tokens}


def case_negative_token(env, d):
    tokens = d / "tokens.npy"
    arr = random_tokens(97, 2, 12).numpy()
    arr[0, 0] = -3
    np.save(tokens, arr)
    return probe_args(env.model, d / "out.parquet", data=["--tokens", str(tokens)]), {"tokens": tokens}


def case_empty_text(env, d):
    text = d / "empty.txt"
    text.write_text("\n\n  \n")
    return probe_args(env.model, d / "out.parquet", data=["--text-file", str(text)]), {"text": text}


def case_empty_tokens(env, d):
    tokens = d / "empty.npy"
    np.save(tokens, np.zeros((0, 16), dtype=np.int64))
    return probe_args(env.model, d / "out.parquet", data=["--tokens", str(tokens)]), {"tokens": tokens}


def case_one_token_windows(env, d):
    tokens = d / "narrow.npy"
    np.save(tokens, np.zeros((4, 1), dtype=np.int64))
    return probe_args(env.model, d / "out.parquet", data=["--tokens", str(tokens)]), {"tokens": tokens}


def case_too_short_text(env, d):
    text = d / "short.txt"
    text.write_text(f"{PARAGRAPH}\n\nshort.\n\n{PARAGRAPH} again")
    argv = probe_args(env.model, d / "out.parquet", data=["--text-file", str(text), "--n-seqs", "4"])
    return argv, {"text": text}


def case_missing_text_file(env, d):
    text = d / "nope.txt"
    return probe_args(env.model, d / "out.parquet", data=["--text-file", str(text)]), {"text": text}


def case_no_data_source(env, d):
    return probe_args(env.model, d / "out.parquet"), {}


def case_two_data_sources(env, d):
    return probe_args(env.model, d / "out.parquet", data=["--tokens", env.tokens, "--text-file", env.text]), {}


def case_non_finite_logits(env, d):
    """Block 1 adds 1e41 * x to the residual when coordinate 1 of its (normalised) input is positive.

    Block 0 drives coordinate 1 to -100, so in the base model block 1 never fires and the output is
    finite; in M_{0<-1} block 1 runs on the raw embeddings, fires and overflows to inf. Of the
    replacement variants only M_{0<-1} runs block 1 at slot 0, so the failing variant is unambiguous
    whatever order the engine computes them in (M_{0<->1} would fail too, hence replacement only).
    """
    m = tiny_model("gpt_neox", n_layers=N_LAYERS)
    blocks = m.gpt_neox.layers
    with torch.no_grad():
        blocks[0].mlp.dense_4h_to_h.bias[1] -= 100.0
        up, down = blocks[1].mlp.dense_h_to_4h, blocks[1].mlp.dense_4h_to_h
        up.weight[0].zero_()
        up.weight[0, 1] = 1e20
        up.bias[0] = 0.0
        down.weight[:, 0].zero_()
        down.weight[2, 0] = 1e21
    folder = d / "overflowing"
    m.save_pretrained(folder)
    return probe_args(folder, d / "out.parquet", "--protocols", "replacement", data=["--tokens", env.tokens]), {}


def case_truncated_safetensors(env, d):
    folder = copy_model(env, d / "truncated")
    weights = folder / "model.safetensors"
    full = weights.stat().st_size
    with open(weights, "r+b") as f:
        f.truncate(full // 2)
    argv = probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens])
    return argv, {"weights": weights, "size": full // 2, "need": full}


def case_truncated_header(env, d):
    folder = copy_model(env, d / "cut-header")
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as f:
        n = int.from_bytes(f.read(8), "little")
        f.truncate(100)
    argv = probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens])
    return argv, {"weights": weights, "need": 8 + n}


def case_missing_shard(env, d):
    folder = copy_model(env, d / "sharded")
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    names = list(load_file(folder / "model-00001-of-00002.safetensors"))
    weight_map = {k: f"model-0000{1 + (i % 2)}-of-00002.safetensors" for i, k in enumerate(names)}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_pickle_only(env, d):
    folder = copy_model(env, d / "pickled")
    weights = folder / "model.safetensors"
    torch.save(load_file(weights), folder / "pytorch_model.bin")
    weights.unlink()
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_bad_pair_set(env, d):
    return probe_args(env.model, d / "out.parquet", "--pairs", "within:0", data=["--tokens", env.tokens]), {}


def case_bad_protocol(env, d):
    return probe_args(env.model, d / "out.parquet", "--protocols", "swap", data=["--tokens", env.tokens]), {}


def case_zero_batch(env, d):
    return probe_args(env.model, d / "out.parquet", "--batch-size", "0", data=["--tokens", env.tokens]), {}


def case_negative_bootstrap(env, d):
    argv = probe_args(env.model, d / "out.parquet", data=["--tokens", env.tokens])
    argv[argv.index("--bootstrap") + 1] = "-1"
    return argv, {}


def case_out_under_a_file(env, d):
    blocker = d / "results.txt"
    blocker.write_text("a file, not a folder")
    return probe_args(env.model, blocker / "out.parquet", data=["--tokens", env.tokens]), {"folder": blocker}


def case_budget_infeasible(env, d):
    probe = d / "probe.parquet"
    run_probe(env.model, str(probe), pairs="adjacent", data=DataSpec(tokens=env.tokens), n_boot=10)
    eval_text = d / "eval.txt"
    eval_text.write_text("\n\n".join(f"{PARAGRAPH} {k}" for k in range(4)))
    argv = ["prune", "--model", env.model, "--probe", str(probe), "--budgets", "1-9",
            "--eval-text-file", str(eval_text), "--eval-window", "32", "--eval-stride", "16",
            "--calib-tokens", env.tokens, "--bootstrap", "10", "--out", str(d / "out.parquet")]
    return argv, {}


def case_not_swapkl_parquet(env, d):
    import pyarrow as pa
    import pyarrow.parquet as pq

    plain = d / "plain.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), plain)
    return ["provenance", str(plain)], {"file": plain}


# name -> (where, case, message template); ``{...}`` fields are filled from the case's values
CLI_CASES = {
    "missing local checkpoint": ("model", case_missing_checkpoint, "model path '{model}' does not exist"),
    "checkpoint without config.json": (
        "model", case_not_a_checkpoint, "model path '{model}' has no config.json (not a Hugging Face checkpoint)"),
    "revision missing under a local model": (
        "CLI", case_local_revision_missing, "revision 'step999' not found under local model '{models}'"),
    "architecture without an adapter": (
        "model", case_no_adapter,
        "architecture 'gpt2' of '{model}' has no swapkl adapter; supported: gpt_neox, llama, mistral, qwen3"),
    "seq_len beyond the model's positions (token file)": (
        "data", case_seq_len_beyond_positions,
        "seq_len 80 exceeds the model's 64 positions (max_position_embeddings)"),
    "seq_len beyond the model's positions (--seq-len)": (
        "CLI", case_text_seq_len_beyond_positions,
        "seq_len 65 exceeds the model's 64 positions (max_position_embeddings)"),
    "token id beyond the vocabulary": (
        "data", case_token_beyond_vocab, "token id 97 in tokens:{tokens} is outside the model vocabulary [0, 97)"),
    "negative token id": (
        "data", case_negative_token, "token id -3 in tokens:{tokens} is outside the model vocabulary [0, 97)"),
    "empty dataset (text)": ("data", case_empty_text, "text_file:{text} is empty"),
    "empty dataset (token file)": ("data", case_empty_tokens, "token file '{tokens}' is empty"),
    "one-token windows": (
        "data", case_one_token_windows,
        "token file '{tokens}' has windows of 1 token; next-token KL needs at least 2"),
    "too-short dataset": (
        "data", case_too_short_text,
        "text_file:{text} has only 2 paragraphs with at least 16 tokens; 4 are needed"),
    "missing text file": ("data", case_missing_text_file, "text file '{text}' does not exist"),
    "no data source": ("CLI", case_no_data_source, "give exactly one data source: --tokens, --dataset or --text-file"),
    "two data sources": (
        "CLI", case_two_data_sources, "give exactly one data source: --tokens, --dataset or --text-file"),
    "non-finite logits": ("model", case_non_finite_logits, "variant replacement:0:1 produced non-finite logits"),
    "truncated safetensors file": (
        "model", case_truncated_safetensors,
        "weight file '{weights}' is truncated: {size} bytes, its header needs {need}"),
    "safetensors file cut inside its header": (
        "model", case_truncated_header, "weight file '{weights}' is truncated: 100 bytes, its header needs {need}"),
    "missing weight shard": (
        "model", case_missing_shard,
        "checkpoint '{model}' lacks the weight shard(s) model-00002-of-00002.safetensors named in its index"),
    "pickle-only checkpoint without --allow-pickle": (
        "model", case_pickle_only,
        "checkpoint '{model}' has only pickle weights (pytorch_model.bin); they load only with --allow-pickle"),
    "unknown pair set": (
        "CLI", case_bad_pair_set, "unknown pair set 'within:0': expected 'adjacent', 'within:K' (K>=1) or 'all'"),
    "unknown protocol": (
        "CLI", case_bad_protocol, "unknown protocol 'swap': choose from replacement, interchange, deletion"),
    "batch size 0": ("CLI", case_zero_batch, "batch_size must be at least 1, got 0"),
    "negative bootstrap count": (
        "CLI", case_negative_bootstrap, "n_boot (bootstrap resamples) must be at least 0, got -1"),
    "results folder is a file": (
        "CLI", case_out_under_a_file, "cannot write to folder '{folder}': a path component is a file, not a folder"),
    "pruning budget larger than feasible": (
        "CLI", case_budget_infeasible,
        "budget 9 is infeasible: with spacing 1 at most 2 of 4 layers can be removed"),
    "not a swapkl Parquet file": ("CLI", case_not_swapkl_parquet, "'{file}' carries no swapkl provenance"),
}


def error_lines(text: str) -> list[str]:
    return [ln[len("swapkl: error: "):] for ln in text.splitlines() if ln.startswith("swapkl: error: ")]


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_cli_bad_input(name, env, tmp_path, capsys):
    _, case, template = CLI_CASES[name]
    argv, values = case(env, tmp_path)
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert error_lines(err) == [template.format(**{k: str(v) for k, v in values.items()})]
    assert "Traceback" not in err
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    if out is not None:
        assert not os.path.exists(out)
        if out.parent.is_dir():
            assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


# ----------------------------------------------------------------------------------------- API case
# run_probe(layers=...) restricts the variants to some blocks; the CLI does not expose it yet.

API_CASES = {
    "layer index out of range": ("API", "layer index 7 is out of range: {model} has 4 layers (0..3)"),
}


def test_layer_index_out_of_range(env, tmp_path):
    out = tmp_path / "out.parquet"
    with pytest.raises(SwapKLError) as e:
        run_probe(env.model, str(out), data=DataSpec(tokens=env.tokens), n_boot=10, layers=[0, 7])
    assert str(e.value) == API_CASES["layer index out of range"][1].format(model=env.model)
    assert not out.exists()


def test_layers_restricts_variants(env, tmp_path):
    """The good path of the same option: only variants inside the given blocks are measured."""
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"
    run_probe(env.model, str(out), pairs="all", data=DataSpec(tokens=env.tokens), n_boot=10, layers="1,3")
    rows = pq.read_table(out, columns=["protocol", "layer_i", "layer_j"]).to_pylist()
    touched = {(r["protocol"], r["layer_i"], r["layer_j"]) for r in rows}
    assert touched == {("base", None, None), ("replacement", 1, 3), ("replacement", 3, 1), ("interchange", 1, 3),
                       ("deletion", 1, None), ("deletion", 3, None)}


# ----------------------------------------------------------------------------------------- config cases

CONFIG_CASES = {
    "unknown config key": (
        lambda m: m.update(bogus_key=1),
        "Invalid config: models.m: Additional properties are not allowed ('bogus_key' was unexpected)"),
    "wrong type": (
        lambda m: m.update(batch_size="eight"),
        "Invalid config: models.m.batch_size: 'eight' is not of type 'integer'"),
    "bad revision name": (
        lambda m: m.update(revisions=["main branch"]),
        "Invalid config: models.m.revisions.0: 'main branch' does not match "
        "'^(step(0|[1-9][0-9]*)|[0-9a-f]{40}|(?!step)[A-Za-z][A-Za-z0-9._-]*)$'"),
}


@pytest.fixture(scope="module")
def config_runs(tmp_path_factory):
    """``snakemake --dry-run`` on each bad config, all started at once (each takes a few seconds)."""
    if not (REPO / "Snakefile").is_file():
        pytest.skip("the workflow (Snakefile) is not there")
    snakemake = Path(sys.executable).with_name("snakemake")
    root = tmp_path_factory.mktemp("configs")
    procs = {}
    for name, (mutate, _) in CONFIG_CASES.items():
        model = {"local": str(root / "checkpoints"), "revisions": ["step0"]}
        mutate(model)
        path = root / (name.replace(" ", "_") + ".yaml")
        path.write_text(yaml.safe_dump({"models": {"m": model}}))
        procs[name] = subprocess.Popen(
            [str(snakemake), "--dry-run", "--nolock", "--replace-workflow-config", "--configfile", str(path)], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return {name: (p.wait(timeout=120), p.stdout.read()) for name, p in procs.items()}


@pytest.mark.parametrize("name", list(CONFIG_CASES))
def test_config_bad_input(name, config_runs):
    code, output = config_runs[name]
    assert code == 1
    lines = [ln for ln in output.splitlines() if ln.startswith("Invalid config:")]
    assert lines == [CONFIG_CASES[name][1]]
    assert "Traceback" not in output


# ----------------------------------------------------------------------------------------- the catalogue


def test_catalogue_lists_every_case():
    """docs/bad_inputs.md shows every message above (templates as written, ``{field}`` placeholders)."""
    doc = DOC.read_text()
    messages = [t for _, _, t in CLI_CASES.values()] + [t for _, t in API_CASES.values()]
    messages += [t for _, t in CONFIG_CASES.values()]
    missing = [m for m in messages if "`" + m.replace("|", "\\|") + "`" not in doc]  # pipes escaped in tables
    assert not missing
    assert len(messages) >= 12
