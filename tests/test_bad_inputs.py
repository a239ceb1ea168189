"""The catalogue of bad inputs (docs/bad_inputs.md): each one gives one exact error line naming
the culprit, a non-zero exit and no output file.

CLI rows run ``swapkl.cli.main`` in-process and compare the ``swapkl: error:`` line of stderr
exactly (exit code 2). Config rows run the workflow's config validation (swapkl.config) on BAD.yaml and compare
its ``Invalid config:`` line; two of them also run ``snakemake --dry-run --replace-workflow-config --configfile
BAD.yaml`` from the repository root (exit code 1, the same line). The table in
docs/bad_inputs.md is checked against the templates here, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import GPTNeoConfig, GPTNeoForCausalLM

from direct_config import refusal_of_file
from swapkl import cli
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
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
    return ["probe", "--model", str(model), *data, "--out", str(out), *extra]


def placeholder(path: Path) -> str:
    """An empty input file: present, so that the paths pass and the option under test is what is refused."""
    path.write_bytes(b"")
    return str(path)


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
    folder = d / "gpt-neo"
    torch.manual_seed(0)
    GPTNeoForCausalLM(GPTNeoConfig(num_layers=2, hidden_size=32, num_heads=4, vocab_size=97,
                                   attention_types=[[["global"], 2]])).save_pretrained(folder)
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
    return ["aggregate-pruning", "--inputs", placeholder(d / "pruning.parquet"), "--bootstrap", "-1", "--out", d / "out.parquet"], {}


def case_out_under_a_file(env, d):
    blocker = d / "results.txt"
    blocker.write_text("a file, not a folder")
    return probe_args(env.model, blocker / "out.parquet", data=["--tokens", env.tokens]), {"folder": blocker}


def case_budget_infeasible(env, d):
    probe = d / "probe.parquet"
    run_probe(ProbeJob(model=env.model, out=str(probe), pairs="adjacent", data=DataSpec(tokens=env.tokens)))
    eval_text = d / "eval.txt"
    eval_text.write_text("\n\n".join(f"{PARAGRAPH} {k}" for k in range(4)))
    argv = ["prune", "--model", env.model, "--probe", str(probe), "--budgets", "1-9",
            "--eval-text-file", str(eval_text), "--eval-window", "32", "--eval-stride", "16",
            "--calib-tokens", env.tokens, "--out", str(d / "out.parquet")]
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
        "architecture 'gpt_neo' of '{model}' has no swapkl adapter; supported: bloom, gemma3_text, gpt2, gpt_neox, llama, "
        "mistral, olmo, olmo2, opt, qwen3"),
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
        "CLI", case_bad_protocol, "unknown protocol 'swap': choose from replacement, interchange, deletion, averaging, head_interchange, averaging_paper, head_interchange_paper, attention_replacement, mlp_replacement, attention_interchange, mlp_interchange, attention_deletion, mlp_deletion"),
    "batch size 0": ("CLI", case_zero_batch, "batch_size must be at least 1, got 0"),
    "negative bootstrap count": (
        "CLI", case_negative_bootstrap, "n_boot (bootstrap resamples) must be at least 1, got -1"),
    "results folder is a file": (
        "CLI", case_out_under_a_file, "cannot write to folder '{folder}': a path component is a file, not a folder"),
    "pruning budget larger than feasible": (
        "CLI", case_budget_infeasible,
        "budget 9 is infeasible: with spacing 1 at most 2 of 4 layers can be removed"),
    "not a swapkl Parquet file": ("CLI", case_not_swapkl_parquet, "'{file}' carries no swapkl provenance"),
}


# -------------------------------------------------------------- inputs that once exited 0 with wrong or lost results
# Each of these used to exit 0: deleting or overwriting a file swapkl did not write, or computing numbers from
# uninitialised memory, randomly initialised tensors or a stale progress file. The test also checks that nothing
# in the case's folder was written, changed or deleted.


def case_progress_file_is_the_weights(env, d):
    folder = copy_model(env, d / "model")  # another copy than the one measured: not an input of the run
    weights = folder / "model.safetensors"
    argv = probe_args(env.model, d / "out.parquet", "--progress-file", weights, data=["--tokens", env.tokens])
    return argv, {"weights": weights}


def case_progress_file_is_out(env, d):
    out = d / "o.parquet"
    return probe_args(env.model, out, "--progress-file", out, data=["--tokens", env.tokens]), {"out": out}


def case_progress_file_links_to_out(env, d):
    out, link = d / "o.parquet", d / "progress.jsonl"
    link.symlink_to(out)  # dangling until the result is written: compared after resolving links
    argv = probe_args(env.model, out, "--progress-file", link, data=["--tokens", env.tokens])
    return argv, {"out": out, "link": link}


def case_repr_out_is_out(env, d):
    out = d / "x.parquet"
    return probe_args(env.model, out, "--repr-out", out, data=["--tokens", env.tokens]), {"out": out}


def case_out_is_the_token_file(env, d):
    tokens = d / "tokens.npy"
    shutil.copy(env.tokens, tokens)
    return probe_args(env.model, tokens, data=["--tokens", tokens]), {"tokens": tokens}


def case_out_is_a_foreign_file(env, d):
    folder = copy_model(env, d / "model")
    weights = folder / "model.safetensors"
    return probe_args(env.model, weights, data=["--tokens", env.tokens]), {"weights": weights}


def case_out_is_a_symlink(env, d):
    target, link = d / "notes.parquet", d / "out.parquet"
    target.write_text("my notes")
    link.symlink_to(target)
    return probe_args(env.model, link, data=["--tokens", env.tokens]), {"link": link}


def case_negative_chunk_tokens(env, d):
    return probe_args(env.model, d / "out.parquet", "--chunk-tokens", "-1", data=["--tokens", env.tokens]), {}


def _rewrite_weights(folder: Path, edit) -> None:
    from safetensors.torch import save_file

    tensors = load_file(folder / "model.safetensors")
    edit(tensors)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


def _edit_config(folder: Path, **changes) -> None:
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def case_missing_tensor(env, d):
    folder = copy_model(env, d / "model")
    _rewrite_weights(folder, lambda t: t.pop("gpt_neox.final_layer_norm.weight"))
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_config_more_layers(env, d):
    folder = copy_model(env, d / "model")
    _edit_config(folder, num_hidden_layers=N_LAYERS + 2)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_config_fewer_layers(env, d):
    folder = copy_model(env, d / "model")
    _edit_config(folder, num_hidden_layers=2)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_llama_config_over_neox_weights(env, d):
    folder = d / "model"
    tiny_model("llama", n_layers=N_LAYERS).save_pretrained(folder)
    shutil.copy(Path(env.model) / "model.safetensors", folder / "model.safetensors")
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_tensor_of_wrong_shape(env, d):
    folder = copy_model(env, d / "model")
    key = "gpt_neox.layers.0.attention.dense.weight"
    _rewrite_weights(folder, lambda t: t.update({key: t[key][:, :16].contiguous()}))
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_fifo_weight_file(env, d):
    folder = copy_model(env, d / "model")
    fifo = folder / "extra.safetensors"
    os.mkfifo(fifo)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"fifo": fifo}


def case_fifo_progress_file(env, d):
    fifo = d / "progress.jsonl"
    os.mkfifo(fifo)
    return probe_args(env.model, d / "out.parquet", "--progress-file", fifo, data=["--tokens", env.tokens]), {
        "fifo": fifo}


# ------------------------------------------------------------------ inputs that once gave a traceback or a wrong hint


def case_text_not_utf8(env, d):
    text = d / "latin1.txt"
    text.write_bytes("caf\u00e9 au lait".encode("latin-1"))
    return probe_args(env.model, d / "out.parquet", data=["--text-file", text]), {"text": text}


def case_unknown_device(env, d):
    return probe_args(env.model, d / "out.parquet", "--device", "tpu", data=["--tokens", env.tokens]), {}


def case_zero_chunk_tokens(env, d):
    return probe_args(env.model, d / "out.parquet", "--chunk-tokens", "0", data=["--tokens", env.tokens]), {}


def case_negative_data_seed(env, d):
    return probe_args(env.model, d / "out.parquet", data=["--text-file", env.text, "--seed", "-1"]), {}


def case_negative_bootstrap_seed(env, d):
    return ["aggregate", "--probe", placeholder(d / "probe.parquet"), "--pair-sets", "m=adjacent", "--bootstrap-seed", "-1",
            "--out", d / "out.parquet"], {}


def case_dangling_weight_file(env, d):
    folder = copy_model(env, d / "model")
    weights = folder / "model.safetensors"
    weights.unlink()
    weights.symlink_to(d / "gone.safetensors")
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {
        "weights": weights, "target": d / "gone.safetensors"}


def case_directory_weight_file(env, d):
    folder = copy_model(env, d / "model")
    weights = folder / "model.safetensors"
    weights.unlink()
    weights.mkdir()
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"weights": weights}


def case_provenance_not_json(env, d):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = d / "bad.parquet"
    pq.write_table(pa.table({"x": [1]}).replace_schema_metadata({b"swapkl": b"{not json"}), bad)
    return ["provenance", str(bad)], {"file": bad}


def case_corrupt_tokenizer(env, d):
    folder = copy_model(env, d / "model")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    return probe_args(folder, d / "out.parquet", data=["--text-file", env.text]), {"model": folder}


def case_text_file_is_a_directory(env, d):
    folder = d / "texts"
    folder.mkdir()
    return probe_args(env.model, d / "out.parquet", data=["--text-file", folder]), {"text": folder}


def case_model_is_a_file(env, d):
    return probe_args(env.text, d / "out.parquet", data=["--tokens", env.tokens]), {"model": env.text}


def case_uint64_token_id(env, d):
    tokens = d / "tokens.npy"
    arr = random_tokens(97, 2, 12).numpy().astype(np.uint64)
    arr[0, 3] = np.iinfo(np.uint64).max
    np.save(tokens, arr)
    return probe_args(env.model, d / "out.parquet", data=["--tokens", tokens]), {"tokens": tokens}


def case_zero_layers(env, d):
    folder = copy_model(env, d / "model")
    _edit_config(folder, num_hidden_layers=0)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_minus_one_layers(env, d):
    folder = copy_model(env, d / "model")
    _edit_config(folder, num_hidden_layers=-1)
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_nothing_to_measure(env, d):
    folder = d / "one-block"
    tiny_model("gpt_neox", n_layers=1).save_pretrained(folder)
    argv = probe_args(folder, d / "out.parquet", "--protocols", "replacement,interchange",
                      data=["--tokens", env.tokens])
    return argv, {"model": folder}


def case_nan_weights(env, d):
    folder = copy_model(env, d / "model")
    key = "gpt_neox.layers.2.mlp.dense_h_to_4h.weight"
    _rewrite_weights(folder, lambda t: t[key].view(-1)[7:9].fill_(float("nan")))
    return probe_args(folder, d / "out.parquet", data=["--tokens", env.tokens]), {"model": folder}


def case_revision_escapes_upwards(env, d):
    models = d / "models"
    copy_model(env, models / "step0")
    copy_model(env, d / "other")
    argv = probe_args(models, d / "out.parquet", "--revision", "../other", data=["--tokens", env.tokens])
    return argv, {"models": models}


def case_revision_is_an_absolute_path(env, d):
    models = d / "models"
    copy_model(env, models / "step0")
    argv = probe_args(models, d / "out.parquet", "--revision", env.model, data=["--tokens", env.tokens])
    return argv, {"models": models, "other": env.model}


CLI_CASES_ISSUE_9 = {
    "--progress-file names the model's weights": (
        "CLI", case_progress_file_is_the_weights,
        "refusing to overwrite progress file '{weights}': it exists and was not written by swapkl"),
    "--progress-file and --out name the same file": (
        "CLI", case_progress_file_is_out,
        "--out and --progress-file name the same file ('{out}' and '{out}'); give each its own path"),
    "--progress-file is a symbolic link to --out": (
        "CLI", case_progress_file_links_to_out,
        "--out and --progress-file name the same file ('{out}' and '{link}'); give each its own path"),
    "--repr-out and --out name the same file": (
        "CLI", case_repr_out_is_out,
        "--out and --repr-out name the same file ('{out}' and '{out}'); give each its own path"),
    "--out names the input token file": (
        "CLI", case_out_is_the_token_file,
        "--out '{tokens}' is the input --tokens '{tokens}'; an output never replaces an input"),
    "--out names an existing file swapkl did not write": (
        "CLI", case_out_is_a_foreign_file,
        "refusing to overwrite output '{weights}': it exists and was not written by swapkl"),
    "--out is a symbolic link": (
        "CLI", case_out_is_a_symlink,
        "refusing to replace output '{link}': it is a symbolic link, not a file swapkl wrote"),
    "--chunk-tokens -1": ("CLI", case_negative_chunk_tokens, "chunk_tokens must be at least 1, got -1"),
    "checkpoint lacks a tensor its config needs": (
        "model", case_missing_tensor,
        "checkpoint '{model}' lacks the weight tensor 'gpt_neox.final_layer_norm.weight' that its config.json "
        "needs; weights and config do not match"),
    "num_hidden_layers larger than the weights": (
        "model", case_config_more_layers,
        "checkpoint '{model}' lacks the weight tensor 'gpt_neox.layers.4.attention.dense.bias' and 23 more that its "
        "config.json needs; weights and config do not match"),
    "num_hidden_layers smaller than the weights": (
        "model", case_config_fewer_layers,
        "checkpoint '{model}' has the weight tensor 'gpt_neox.layers.2.attention.dense.bias' and 23 more that its "
        "config.json does not use; weights and config do not match"),
    "Llama config.json over GPT-NeoX weights": (
        "model", case_llama_config_over_neox_weights,
        "checkpoint '{model}' lacks the weight tensor 'lm_head.weight' and 38 more that its config.json needs; "
        "weights and config do not match"),
    "weight tensor of the wrong shape": (
        "model", case_tensor_of_wrong_shape,
        "weight tensor 'gpt_neox.layers.0.attention.dense.weight' of '{model}' has shape [32, 16] but its "
        "config.json needs [32, 32] (1 mismatched tensor(s)); weights and config do not match"),
    "FIFO as a weight file": ("model", case_fifo_weight_file, "weight file '{fifo}' is a FIFO, not a regular file"),
    "FIFO as --progress-file": (
        "CLI", case_fifo_progress_file,
        "refusing to replace progress file '{fifo}': it is a FIFO, not a file swapkl wrote"),
    "--text-file that is not UTF-8": (
        "data", case_text_not_utf8,
        "text file '{text}' is not UTF-8 text: byte 0xe9 at offset 3 is not valid UTF-8"),
    "--device tpu": ("CLI", case_unknown_device, "unknown device 'tpu': choose cpu, cuda, cuda:N, mps or auto"),
    "--chunk-tokens 0": ("CLI", case_zero_chunk_tokens, "chunk_tokens must be at least 1, got 0"),
    "negative --seed": ("CLI", case_negative_data_seed, "seed (of the window draw) must be at least 0, got -1"),
    "negative --bootstrap-seed": (
        "CLI", case_negative_bootstrap_seed, "aggregate: seed must be an integer >= 0, got -1"),
    "dangling weight file": (
        "model", case_dangling_weight_file,
        "weight file '{weights}' is a dangling symbolic link (to '{target}')"),
    "directory as a weight file": (
        "model", case_directory_weight_file, "weight file '{weights}' is a directory, not a regular file"),
    "provenance that is not valid JSON": (
        "CLI", case_provenance_not_json,
        "'{file}' carries swapkl provenance that is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))"),
    "corrupt tokenizer.json": (
        "model", case_corrupt_tokenizer,
        "cannot load the tokenizer of '{model}': Expecting value: line 1 column 29 (char 28)"),
    "directory as --text-file": (
        "data", case_text_file_is_a_directory, "text file '{text}' is a directory, not a regular file"),
    "file as --model": ("CLI", case_model_is_a_file, "model path '{model}' is a file, not a checkpoint directory"),
    "uint64 token id beyond int64": (
        "data", case_uint64_token_id,
        "token id 18446744073709551615 in tokens:{tokens} does not fit in int64 (no vocabulary is that large)"),
    "model with 0 layers": (
        "model", case_zero_layers,
        "config.json of '{model}' sets num_hidden_layers to 0; a model needs at least 1 block"),
    "model with -1 layers": (
        "model", case_minus_one_layers,
        "config.json of '{model}' sets num_hidden_layers to -1; a model needs at least 1 block"),
    "no variant to measure (1 block, pairs only)": (
        "model", case_nothing_to_measure,
        "{model} has 1 block(s): no variant of protocols replacement, interchange with pairs adjacent exists, "
        "nothing to measure"),
    "NaN in a weight tensor": (
        "model", case_nan_weights,
        "weight tensor 'gpt_neox.layers.2.mlp.dense_h_to_4h.weight' of '{model}' holds non-finite values (NaN or Inf)"),
    "--revision ../other escapes the local model": (
        "CLI", case_revision_escapes_upwards,
        "revision '../other' of local model '{models}' must be the name of one of its subdirectories "
        "(no '/', '.' or '..')"),
    "--revision is an absolute path": (
        "CLI", case_revision_is_an_absolute_path,
        "revision '{other}' of local model '{models}' must be the name of one of its subdirectories "
        "(no '/', '.' or '..')"),
}


# ------------------------------------------------------------------------------- found beyond the issue's list


def case_provenance_of_a_fifo(env, d):
    fifo = d / "results.parquet"
    os.mkfifo(fifo)
    return ["provenance", str(fifo)], {"fifo": fifo}


def case_prune_outputs_are_one_file(env, d):
    out = d / "pruning.parquet"
    argv = ["prune", "--model", env.model, "--probe", placeholder(d / "probe.parquet"), "--eval-text-file", env.text,
            "--calib-tokens", env.tokens, "--agreement-out", str(out), "--out", str(out)]
    return argv, {"out": out}


def case_prune_negative_calibration_seed(env, d):
    argv = ["prune", "--model", env.model, "--probe", placeholder(d / "probe.parquet"), "--eval-text-file", env.text,
            "--calib-text-file", env.text, "--calib-seed", "-1", "--out", str(d / "pruning.parquet")]
    return argv, {}


def case_aggregate_out_is_a_foreign_file(env, d):
    notes = d / "notes.parquet"
    notes.write_text("my notes")
    argv = ["aggregate", "--probe", placeholder(d / "p.parquet"), "--pair-sets", "m=adjacent", "--out", str(notes)]
    return argv, {"notes": notes}


def case_window_options_with_tokens(env, d):
    return probe_args(env.model, d / "out.parquet", data=["--tokens", env.tokens, "--n-seqs", "2", "--seed", "3"]), {}


def case_split_with_text_file(env, d):
    return probe_args(env.model, d / "out.parquet", data=["--text-file", env.text, "--split", "test"]), {}


CLI_CASES_ISSUE_9.update({
    "window options with `--tokens` (which uses the token file as it is)": (
        "CLI", case_window_options_with_tokens,
        "--n-seqs, --seed have no effect with --tokens (a token file is used as it is); leave it out"),
    "`--split` with `--text-file`": (
        "CLI", case_split_with_text_file, "--split has no effect with --text-file; leave it out"),
    "`swapkl provenance` on a FIFO": (
        "CLI", case_provenance_of_a_fifo, "Parquet file '{fifo}' is a FIFO, not a regular file"),
    "`prune --agreement-out` and `--out` name the same file": (
        "CLI", case_prune_outputs_are_one_file,
        "--out and --agreement-out name the same file ('{out}' and '{out}'); give each its own path"),
    "negative `prune --calib-seed` (checked before the model is loaded)": (
        "CLI", case_prune_negative_calibration_seed, "seed (of the window draw) must be at least 0, got -1"),
    "`aggregate --out` names an existing file swapkl did not write": (
        "CLI", case_aggregate_out_is_a_foreign_file,
        "refusing to overwrite output '{notes}': it exists and was not written by swapkl"),
})
CLI_CASES.update(CLI_CASES_ISSUE_9)


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file under ``folder``: its kind, and the contents of regular files (FIFOs are never opened)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(root, x))]:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[p] = ("file", Path(p).read_bytes())
            elif stat.S_ISLNK(st.st_mode):
                out[p] = ("link", os.readlink(p))
            else:
                out[p] = ("other", st.st_mode)
    return out


def error_lines(text: str) -> list[str]:
    return [ln[len("swapkl: error: "):] for ln in text.splitlines() if ln.startswith("swapkl: error: ")]


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_cli_bad_input(name, env, tmp_path, capsys):
    _, case, template = CLI_CASES[name]
    argv, values = case(env, tmp_path)
    before = snapshot(tmp_path)
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert error_lines(err) == [template.format(**{k: str(v) for k, v in values.items()})]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before  # nothing written, changed or deleted
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    if out is not None and str(out) not in before:
        assert not os.path.exists(out)
        if out.parent.is_dir():
            assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


# ----------------------------------------------------------------------------------------- API case
# ProbeJob(layers=...) restricts the variants to some blocks; the CLI does not expose it yet.

API_CASES = {
    "layer index out of range": ("API", "layer index 7 is out of range: {model} has 4 layers (0..3)"),
    "unreadable weight file": ("API", "cannot read weight file '{weights}': permission denied"),
    "non-integer option (run_probe(ProbeJob(..., batch_size=2.5)))": ("API", "batch_size must be an integer, got 2.5"),
    "negative chunk size in the engine (ProbeEngine(chunk_tokens=-1))": (
        "API", "chunk_tokens must be at least 1, got -1"),
    "aggregate of probe files measured on different token windows": (
        "API", "{second}: tokens_sha256 differs from {first} for m main ({b} vs {a}); files measured on different "
               "weights, config, data or dtype cannot be compared"),
    "figure output names a file swapkl did not write": (
        "API", "refusing to overwrite figure '{png}': it exists and was not written by swapkl"),
    "aggregate of revisions of one model measured on different windows": (
        "API", "{second}: tokens_sha256 differs from {first} for model m (revisions are compared along training) "
               "({b} vs {a}); files measured on different weights, config, data or dtype cannot be compared"),
    "aggregate input given twice under two names": ("API", "{link}: given twice as an input (it is {probe})"),
    "aggregate `out` names one of its inputs": (
        "API", "`out` '{probe}' is the input `probe_files` '{probe}'; an output never replaces an input"),
}


def test_layer_index_out_of_range(env, tmp_path):
    out = tmp_path / "out.parquet"
    with pytest.raises(SwapKLError) as e:
        run_probe(ProbeJob(model=env.model, out=str(out), data=DataSpec(tokens=env.tokens), layers=[0, 7]))
    assert str(e.value) == API_CASES["layer index out of range"][1].format(model=env.model)
    assert not out.exists()


def test_unreadable_weight_file(env, tmp_path, monkeypatch):
    """Root reads any file whatever its mode, so the refusal is injected where swapkl opens it."""
    from swapkl.tables import file_checks

    folder = copy_model(env, tmp_path / "model")
    weights = folder / "model.safetensors"
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path) == str(weights):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(file_checks.os, "open", refuse)
    with pytest.raises(SwapKLError) as e:
        run_probe(ProbeJob(model=str(folder), out=str(tmp_path / "out.parquet"), data=DataSpec(tokens=env.tokens)))
    assert str(e.value) == API_CASES["unreadable weight file"][1].format(weights=weights)


def test_non_integer_option_in_the_python_api(env, tmp_path):
    with pytest.raises(SwapKLError) as e:
        run_probe(ProbeJob(model=env.model, out=str(tmp_path / "out.parquet"), data=DataSpec(tokens=env.tokens),
                           batch_size=2.5))
    assert str(e.value) == API_CASES["non-integer option (run_probe(ProbeJob(..., batch_size=2.5)))"][1]
    assert list(tmp_path.iterdir()) == []


def test_negative_chunk_size_in_the_engine(env):
    from swapkl.model.engine import ProbeEngine

    with pytest.raises(SwapKLError) as e:
        ProbeEngine(tiny_model("gpt_neox", n_layers=2), chunk_tokens=-1)
    assert str(e.value) == API_CASES["negative chunk size in the engine (ProbeEngine(chunk_tokens=-1))"][1]


def _two_protocol_files(env, d: Path, tokens_b: str) -> tuple[Path, Path]:
    """Replacement measured on env.tokens, interchange on ``tokens_b``: one checkpoint, two windows."""
    a, b = d / "replacement.parquet", d / "interchange.parquet"
    meta = {"model": "m", "revision": "main"}
    run_probe(ProbeJob(model=env.model, out=str(a), protocols="replacement", data=DataSpec(tokens=env.tokens),
                       metadata=meta))
    run_probe(ProbeJob(model=env.model, out=str(b), protocols="interchange", data=DataSpec(tokens=tokens_b),
                       metadata=meta))
    return a, b


def test_aggregate_refuses_files_measured_on_different_windows(env, tmp_path):
    from swapkl.tables import provenance
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob

    other = tmp_path / "other.npy"
    np.save(other, random_tokens(97, 4, 12, seed=9).numpy())
    a, b = _two_protocol_files(env, tmp_path, str(other))
    out = tmp_path / "agg.parquet"
    with pytest.raises(SwapKLError) as e:
        aggregate(AggregateJob(probe_files=[a, b], repr_files=[], out=out, pair_sets={"m": ["adjacent"]}, n_boot=10))
    ta, tb = (repr(provenance.read(str(p))["tokens_sha256"][:12] + "...") for p in (a, b))
    assert str(e.value) == API_CASES["aggregate of probe files measured on different token windows"][1].format(
        first=a, second=b, a=ta, b=tb)
    assert not out.exists()
    # the same two protocols on the same windows aggregate fine (the check is not over-eager)
    a2, b2 = _two_protocol_files(env, tmp_path / "same", env.tokens)
    aggregate(AggregateJob(probe_files=[a2, b2], repr_files=[], out=out, pair_sets={"m": ["adjacent"]}, n_boot=10))
    assert out.exists()


def test_aggregate_refuses_revisions_measured_on_different_windows(env, tmp_path):
    """Two revisions of one model on different windows: their gaps are no training trajectory."""
    from swapkl.tables import provenance
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob

    other = tmp_path / "other.npy"
    np.save(other, random_tokens(97, 4, 12, seed=9).numpy())
    files = []
    for rev, tokens in (("step1", env.tokens), ("step2", str(other))):
        files.append(tmp_path / f"{rev}.parquet")
        run_probe(ProbeJob(model=env.model, out=str(files[-1]), data=DataSpec(tokens=tokens),
                           metadata={"model": "m", "revision": rev}))
    with pytest.raises(SwapKLError) as e:
        aggregate(AggregateJob(probe_files=files, repr_files=[], out=tmp_path / "agg.parquet",
                               pair_sets={"m": ["adjacent"]}, n_boot=10))
    ta, tb = (repr(provenance.read(str(p))["tokens_sha256"][:12] + "...") for p in files)
    assert str(e.value) == API_CASES["aggregate of revisions of one model measured on different windows"][1].format(
        first=files[0], second=files[1], a=ta, b=tb)


def test_aggregate_never_writes_over_an_input(env, tmp_path):
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob

    a, b = _two_protocol_files(env, tmp_path, env.tokens)
    before = a.read_bytes()
    with pytest.raises(SwapKLError) as e:
        aggregate(AggregateJob(probe_files=[a, b], repr_files=[], out=a, pair_sets={"m": ["adjacent"]}, n_boot=10))
    assert str(e.value) == API_CASES["aggregate `out` names one of its inputs"][1].format(probe=a)
    assert a.read_bytes() == before


def test_figures_only_replace_figures_swapkl_drew(tmp_path):
    import matplotlib.pyplot as plt

    from swapkl.figures.style import save_figure

    png, pdf = tmp_path / "fig.png", tmp_path / "fig.pdf"
    fig = plt.figure()
    save_figure(fig, png, pdf)
    save_figure(fig, png, pdf)  # its own figures are replaced on a rerun
    png.write_bytes(b"\x89PNG a photo of my cat")
    with pytest.raises(SwapKLError) as e:
        save_figure(fig, png, pdf)
    plt.close(fig)
    assert str(e.value) == API_CASES["figure output names a file swapkl did not write"][1].format(png=png)
    assert png.read_bytes() == b"\x89PNG a photo of my cat"


def test_aggregate_sees_one_file_under_two_names(env, tmp_path):
    """A probe file given once by its name and once through a symbolic link would count its variants twice."""
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob

    a, b = _two_protocol_files(env, tmp_path, env.tokens)
    link = tmp_path / "link.parquet"
    link.symlink_to(a)
    with pytest.raises(SwapKLError) as e:
        aggregate(AggregateJob(probe_files=[a, b, link], repr_files=[], out=tmp_path / "agg.parquet",
                               pair_sets={"m": ["adjacent"]}, n_boot=10))
    assert str(e.value) == API_CASES["aggregate input given twice under two names"][1].format(link=link, probe=a)


def test_token_file_provenance_records_only_the_token_file(env, tmp_path):
    """--tokens ignores --n-seqs, --seq-len, --split...: the provenance must not claim them."""
    from swapkl.tables import provenance

    out = tmp_path / "out.parquet"
    assert cli.main(probe_args(env.model, out, data=["--tokens", env.tokens])) == 0
    assert provenance.read(str(out))["data_spec"] == {"tokens": env.tokens}


def test_layers_restricts_variants(env, tmp_path):
    """The good path of the same option: only variants inside the given blocks are measured."""
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"
    run_probe(ProbeJob(model=env.model, out=str(out), pairs="all", data=DataSpec(tokens=env.tokens), layers="1,3"))
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


CONFIG_CASES.update({
    "pruning evaluation text is the probe text": (
        lambda m: m.update(data={"dataset": "wikitext", "dataset_config": "wikitext-2-raw-v1", "split": "test"},
                           prune={"enabled": True}),
        "Invalid config: models.m.prune.eval: the evaluation text is the probe text (models.m.data); perplexity "
        "must be measured on held-out text: use another split or file"),
    "pruning evaluation text is the calibration text": (
        lambda m: m.update(data={"text_file": "probe.txt"},
                           prune={"enabled": True, "eval": {"text_file": "held-out.txt"},
                                  "calibration": {"text_file": "./held-out.txt"}}),
        "Invalid config: models.m.prune.eval: the evaluation text is the calibration text "
        "(models.m.prune.calibration); perplexity must be measured on held-out text: use another split or file"),
    "a study's section given as yes or no (its form before it was a study folder)": (
        lambda m: m.update(predictor_validity=True),
        "Invalid config: models.m.predictor_validity: a study's section is a mapping; write "
        "`predictor_validity: {enabled: true}`"),
    "a model key a study's section replaced": (
        lambda m: m.update(domain_slice_of="other"),
        "Invalid config: models.m.domain_slice_of: replaced by the `domain_slices` section; write "
        "`domain_slices: {enabled: true, reference: <model>}`"),
})

# Cases that a mapping cannot express: the config file's text; ``{checkpoints}`` is a local folder.
CONFIG_TEXT_CASES = {
    "model key given twice": (
        "models:\n  m:\n    local: {checkpoints}\n    revisions: [step0]\n    batch_size: 4\n"
        "  m:\n    local: {checkpoints}\n    revisions: [step0]\n",
        "Invalid config: {path}: line 6: key 'm' appears a second time in one mapping (first on line 2); YAML "
        "would silently keep only the last"),
    "model named like a workflow output": (
        "models:\n  aggregate_results.log:\n    local: {checkpoints}\n    revisions: [step0]\n",
        "Invalid config: models.aggregate_results.log: a model name ending in '.log' can collide with the "
        "workflow's own files (e.g. logs/aggregate_results.log); choose a name without that extension"),
    "model named like a workflow folder": (
        "models:\n  demo:\n    local: {checkpoints}\n    revisions: [step0]\n",
        "Invalid config: models.demo: the workflow uses 'demo' for its own folders; choose another model name"),
    "two model names that differ only in case": (
        "models:\n  pythia:\n    local: {checkpoints}\n    revisions: [step0]\n"
        "  Pythia:\n    local: {checkpoints}\n    revisions: [step0]\n",
        "Invalid config: models.Pythia: differs from models.pythia only in case; their folders would be the same "
        "on a case-insensitive file system"),
    "YTE template (Snakemake's loader runs its expressions)": (
        "__use_yte__: true\nmodels:\n  m:\n    local: {checkpoints}\n    revisions: [step0]\n",
        "Invalid config: {path}: line 1: __use_yte__ makes the file a YTE template, whose expressions Snakemake "
        "runs as Python while it reads the file; a config file holds data, never code: write the values out (a "
        "file given with --configfile has already run by the time this is seen: read what it does)"),
}


def _config_files(root: Path, names) -> dict:
    """name -> the bad config file of that case (its local checkpoint folder under ``root``)."""
    paths = {}
    for name in names:
        paths[name] = root / (name.replace(" ", "_") + ".yaml")
        if name in CONFIG_CASES:
            model = {"local": str(root / "checkpoints"), "revisions": ["step0"]}
            CONFIG_CASES[name][0](model)
            paths[name].write_text(yaml.safe_dump({"models": {"m": model}}))
        else:
            paths[name].write_text(CONFIG_TEXT_CASES[name][0].format(checkpoints=root / "checkpoints"))
    return paths


def _template(name: str, path: Path) -> str:
    return CONFIG_TEXT_CASES[name][1].format(path=path) if name in CONFIG_TEXT_CASES else CONFIG_CASES[name][1]


@pytest.mark.parametrize("name", list(CONFIG_CASES) + list(CONFIG_TEXT_CASES))
def test_config_bad_input(name, tmp_path):
    """The workflow's config validation (swapkl.config, called directly) refuses each case in one line."""
    path = _config_files(tmp_path, [name])[name]
    assert refusal_of_file(path, base_dir=tmp_path) == _template(name, path)


def test_config_bad_input_stops_snakemake_in_one_line(tmp_path):
    """The wiring: `snakemake --dry-run` with a bad config file exits 1 with exactly that line, no traceback (a
    case found in the file's text, so the config file's path reaches the check, and a schema case)."""
    if not (REPO / "Snakefile").is_file():
        pytest.skip("the workflow (Snakefile) is not there")
    snakemake = Path(sys.executable).with_name("snakemake")
    paths = _config_files(tmp_path, ["model key given twice", "wrong type"])
    procs = {name: subprocess.Popen([str(snakemake), "--dry-run", "--nolock", "--replace-workflow-config",
                                     "--configfile", str(path)], cwd=REPO, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
             for name, path in paths.items()}
    for name, proc in procs.items():
        code, output = proc.wait(timeout=300), proc.stdout.read()
        assert code == 1
        assert [ln for ln in output.splitlines() if ln.startswith("Invalid config:")] == [_template(name, paths[name])]
        assert "Traceback" not in output


# ----------------------------------------------------------------------------------------- the catalogue


def test_catalogue_lists_every_case():
    """docs/bad_inputs.md shows every message above (templates as written, ``{field}`` placeholders); the README
    links to it instead of repeating it."""
    docs = [DOC.read_text()]
    assert "docs/bad_inputs.md" in (REPO / "README.md").read_text()
    messages = [t for _, _, t in CLI_CASES.values()] + [t for _, t in API_CASES.values()]
    messages += [t for _, t in CONFIG_CASES.values()] + [t for _, t in CONFIG_TEXT_CASES.values()]
    for doc in docs:
        # pipes escaped in tables; a message that holds backticks is set in double ones (Markdown)
        missing = [m for m in messages if ("`` " + m.replace("|", "\\|") + " ``" if "`" in m
                                           else "`" + m.replace("|", "\\|") + "`") not in doc]
        assert not missing
    assert len(messages) >= 12
