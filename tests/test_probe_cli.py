"""``run_probe`` and the ``swapkl probe`` CLI: output contract, provenance, and every bad input.

Every bad input must give exactly one line on stderr (``swapkl: error: ...``), exit code 2
and no output file (nor a temporary one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import naive_reference as ref
from swapkl.tables import provenance
from swapkl.cli import main
from swapkl.probes.pairs import pairs_for
from test_data import corpus, word_tokenizer, write_text
from tiny_models import ARCHS, random_tokens, tiny_model

L = 4
VOCAB = 97
MAX_POS = 64  # tiny_model's max_position_embeddings
# no confidence intervals: `swapkl aggregate` computes them from the per-sequence sums
COLUMNS = ["model", "revision", "step", "protocol", "layer_i", "layer_j", "n_layers", "kl_mean", "nll_mean",
           "n_seqs", "n_tokens", "seq_kl_sum", "seq_tokens", "seq_nll_sum", "seq_nll_tokens", "head"]
PROVENANCE_KEYS = ["swapkl_version", "torch", "transformers", "python", "model_id", "revision", "commit",
                   "weights_sha256", "data_source", "tokens_sha256", "dtype", "device", "n_seqs", "seq_len",
                   "protocols", "pairs"]
VENV_SWAPKL = Path(sys.executable).parent / "swapkl"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    """A tiny GPT-NeoX checkpoint (safetensors) with a word-level tokenizer."""
    d = tmp_path_factory.mktemp("ckpt") / "model"
    tiny_model("gpt_neox", n_layers=L, vocab=VOCAB).save_pretrained(d)
    word_tokenizer().save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("tok") / "tokens.npy"
    np.save(p, random_tokens(VOCAB, 5, 12, seed=2).numpy())
    return p


def run_cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["probe", *map(str, args)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def assert_clean_failure(rc, err, out_path: Path, match: str):
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert lines[0].startswith("swapkl: error: "), lines[0]
    assert match in lines[0], lines[0]
    assert not out_path.exists()
    leftovers = [n for n in os.listdir(out_path.parent) if n.endswith(".parquet")] if out_path.parent.exists() else []
    assert leftovers == [], leftovers


# -- the output contract --------------------------------------------------------------

def test_probe_output_contract(ckpt, tokens, tmp_path, capsys):
    out = tmp_path / "res" / "probe.parquet"
    rc, _, err = run_cli(capsys, "--model", ckpt, "--tokens", tokens, "--pairs", "within:2", "--device", "cpu",
                         "--batch-size", 2, "--chunk-tokens", 7, "--out", out)
    assert rc == 0, err
    df = pq.read_table(out).to_pandas()
    assert list(df.columns) == COLUMNS
    n_pairs = len(pairs_for("within:2", L))
    assert len(df) == 1 + 2 * n_pairs + n_pairs + L
    assert df.protocol.value_counts().to_dict() == {"base": 1, "replacement": 2 * n_pairs, "interchange": n_pairs,
                                                    "deletion": L}
    inter = df[df.protocol == "interchange"]
    assert (inter.layer_i < inter.layer_j).all()
    dele = df[df.protocol == "deletion"]
    assert dele.layer_j.isna().all() and sorted(dele.layer_i) == list(range(L)) and dele.nll_mean.notna().all()
    var = df[df.protocol != "base"]
    assert (df.n_seqs == 5).all() and (df.n_tokens == 60).all() and (df.n_layers == L).all()
    base = df[df.protocol == "base"].iloc[0]
    assert base.kl_mean == 0.0 and base.nll_mean > 0

    # the numbers, per sequence, against the naive reference (batches of 2 were stitched together)
    model = tiny_model("gpt_neox", n_layers=L, vocab=VOCAB)
    ids = torch.from_numpy(np.load(tokens))
    mask = torch.ones_like(ids)
    base_logits = ref.logits(model, ids, mask)
    for r in var.itertuples():
        i, j = int(r.layer_i), (None if np.isnan(r.layer_j) else int(r.layer_j))
        order = {"replacement": lambda: ref.replacement_order(i, j, L),
                 "interchange": lambda: ref.interchange_order(i, j, L),
                 "deletion": lambda: ref.deletion_order(i, L)}[r.protocol]()
        want = ref.per_sequence(model, ids, mask, order, base_logits)
        got = np.asarray(r.seq_kl_sum) / np.asarray(r.seq_tokens)
        np.testing.assert_allclose(got, want.kl_mean.numpy(), rtol=1e-5, err_msg=f"{r.protocol} {i} {j}")
        np.testing.assert_allclose(r.kl_mean, want.kl_grand, rtol=1e-5)
        if r.protocol == "deletion":
            np.testing.assert_allclose(r.nll_mean, float(want.nll_sum.sum() / want.nll_tokens.sum()), rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_weight_protocols_on_every_architecture(arch, tokens, tmp_path, capsys):
    from swapkl.model.heads import n_units

    model = tiny_model(arch, n_layers=L, vocab=VOCAB)
    model.save_pretrained(tmp_path / "model")
    out = tmp_path / "w.parquet"
    rc, _, err = run_cli(capsys, "--model", tmp_path / "model", "--tokens", tokens, "--protocols",
                         "averaging,head_interchange", "--pairs", "adjacent", "--device", "cpu",
                         "--out", out)
    assert rc == 0, err
    df = pq.read_table(out).to_pandas()
    units = n_units(model.config)
    av, hd = df[df["protocol"] == "averaging"], df[df["protocol"] == "head_interchange"]
    assert sorted(zip(av["layer_i"], av["layer_j"])) == sorted([(i, i + 1) for i in range(L - 1)] +
                                                                [(i + 1, i) for i in range(L - 1)])
    assert sorted(zip(hd["layer_i"], hd["layer_j"], hd["head"])) == [(i, i + 1, u) for i in range(L - 1)
                                                                      for u in range(units)]
    assert av["head"].isna().all() and (df["kl_mean"][df["protocol"] != "base"] > 0).all()


def test_provenance_keys_and_command(ckpt, tokens, tmp_path, capsys):
    out = tmp_path / "p.parquet"
    rc, _, err = run_cli(capsys, "--model", ckpt, "--tokens", tokens, "--protocols", "deletion", "--out", out)
    assert rc == 0, err
    prov = provenance.read(str(out))
    for k in PROVENANCE_KEYS:
        assert k in prov, k
    assert prov["torch"] == torch.__version__
    assert prov["dtype"] == "float32" and prov["device"] == "cpu"
    assert "seed" not in prov and "n_boot" not in prov  # the bootstrap belongs to the aggregate
    assert prov["data_source"] == f"tokens:{tokens}" and len(prov["tokens_sha256"]) == 64
    assert prov["pairs"] == "adjacent" and prov["protocols"] == ["deletion"]
    assert main(["provenance", str(out)]) == 0
    printed = capsys.readouterr().out
    for k in PROVENANCE_KEYS:
        assert any(line.split()[0] == k for line in printed.splitlines() if line.strip()), k
    assert main(["provenance", "--json", str(out)]) == 0
    assert '"tokens_sha256"' in capsys.readouterr().out


def test_text_file_source(ckpt, tmp_path, capsys):
    text = write_text(tmp_path / "c.txt", corpus(30, seed=7, min_len=3, max_len=25))
    out = tmp_path / "t.parquet"
    rc, _, err = run_cli(capsys, "--model", ckpt, "--text-file", text, "--n-seqs", 6, "--seq-len", 16,
                         "--min-tokens", 5, "--seed", 3, "--protocols", "deletion", "--out", out)
    assert rc == 0, err
    df = pq.read_table(out).to_pandas()
    from swapkl.data.data_spec import DataSpec
    from swapkl.data.windows import load_windows

    w = load_windows(DataSpec(text_file=text, n_seqs=6, seq_len=16, min_tokens=5, seed=3), word_tokenizer())
    assert (df.n_tokens == w.n_tokens).all() and w.n_tokens < 6 * 16  # padded rows, padding not counted
    assert list(df.seq_tokens.iloc[0]) == w.attention_mask.sum(1).tolist()
    assert provenance.read(str(out))["tokens_sha256"] == w.sha256
    # padded windows through the whole CLI, per sequence, against the naive reference
    model = tiny_model("gpt_neox", n_layers=L, vocab=VOCAB)
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    base_logits = ref.logits(model, ids, mask)
    for r in df[df.protocol == "deletion"].itertuples():
        want = ref.per_sequence(model, ids, mask, ref.deletion_order(int(r.layer_i), L), base_logits)
        np.testing.assert_allclose(np.asarray(r.seq_kl_sum) / np.asarray(r.seq_tokens), want.kl_mean.numpy(),
                                   rtol=1e-5)
        np.testing.assert_allclose(np.asarray(r.seq_nll_sum), want.nll_sum.numpy(), rtol=1e-5)


def test_compatibility_inputs_from_the_command_line(ckpt, tmp_path, capsys):
    """--text-format lines --padding counted: every position counted, recorded in the provenance."""
    text = tmp_path / "prompts.txt"
    text.write_text("".join(" ".join(w) + "\n" for w in corpus(6, seed=2, min_len=3, max_len=9)))
    out = tmp_path / "p.parquet"
    rc, _, err = run_cli(capsys, "--model", ckpt, "--text-file", text, "--text-format", "lines", "--padding",
                         "counted", "--n-seqs", 6, "--seq-len", 16, "--min-tokens", 2, "--protocols", "deletion",
                         "--out", out)
    assert rc == 0, err
    df = pq.read_table(out).to_pandas()
    assert (df.n_tokens == 6 * 16).all()  # padding counted
    spec = provenance.read(str(out))["data_spec"]
    assert spec["padding"] == "counted" and spec["text_format"] == "lines"


def test_local_revision_subdirectory(ckpt, tokens, tmp_path, capsys):
    root = tmp_path / "pythia"
    shutil.copytree(ckpt, root / "step1000")
    out = tmp_path / "r.parquet"
    rc, _, err = run_cli(capsys, "--model", root, "--revision", "step1000", "--tokens", tokens,
                         "--protocols", "deletion", "--out", out)
    assert rc == 0, err
    df = pq.read_table(out).to_pandas()
    assert (df.revision == "step1000").all() and (df.step == 1000).all()


# -- bad inputs -------------------------------------------------------------------------

def _save_tokens(path: Path, arr) -> Path:
    np.save(path, np.asarray(arr, dtype=np.int64))
    return path


def _gpt_neo_checkpoint(d: Path) -> Path:
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    GPTNeoForCausalLM(GPTNeoConfig(num_layers=2, hidden_size=16, num_heads=2, vocab_size=VOCAB,
                                   attention_types=[[["global"], 2]])).save_pretrained(d)
    return d


def _nan_block_checkpoint(d: Path) -> Path:
    model = tiny_model("llama", n_layers=3, vocab=VOCAB)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight.fill_(float("nan"))
    model.save_pretrained(d)
    return d


def _overflow_base_checkpoint(d: Path) -> Path:
    """Finite weights, but block 1's MLP output is so large that the base residual stream overflows there."""
    model = tiny_model("llama", n_layers=3, vocab=VOCAB)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight.fill_(3e38)
    model.save_pretrained(d)
    return d


def variant_only_overflow_model():
    """GPT-NeoX whose base model is finite but whose last block overflows to inf unless block 0 ran before it.

    Only block 0 writes coordinate 0 of the residual stream (embedding: +50; block 0 adds -100). The last
    block has one MLP unit reading coordinate 0 with a huge weight: in the base model its pre-activation is
    hugely negative, GELU gives exactly 0 and its huge output column contributes nothing; in any variant
    where block 0 has not run (deletion of 0, replacement 0<-j, ...) it is hugely positive and overflows.
    """
    model = tiny_model("gpt_neox", n_layers=L, vocab=VOCAB)
    blocks = model.gpt_neox.layers
    with torch.no_grad():
        model.gpt_neox.embed_in.weight[:, 0] = 50.0
        for b in blocks:
            for lin in (b.attention.dense, b.mlp.dense_4h_to_h):
                lin.weight[0, :] = 0.0
                lin.bias[0] = 0.0
        blocks[0].mlp.dense_4h_to_h.bias[0] = -100.0
        last = blocks[-1].mlp
        last.dense_h_to_4h.weight[0, :] = 0.0
        last.dense_h_to_4h.weight[0, 0] = 1e4
        last.dense_h_to_4h.bias[0] = 0.0
        last.dense_4h_to_h.weight[1:, 0] = 1e35
    return model


def _overflow_checkpoint(d: Path) -> Path:
    variant_only_overflow_model().save_pretrained(d)
    return d


def _truncated_checkpoint(src: Path, d: Path) -> Path:
    shutil.copytree(src, d)
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 100])
    return d


def _local_dataset(d: Path) -> Path:
    d.mkdir()
    (d / "test.txt").write_text("\n = Heading = \n\n = = Sub = = \n\n")
    return d


BAD = {
    # name: (extra args builder(ckpt, tokens, tmp) -> args, expected message fragment)
    "missing model path": (lambda c, t, d: ["--model", d / "nowhere", "--tokens", t], "does not exist"),
    "missing revision": (lambda c, t, d: (shutil.copytree(c, d / "m" / "step1000"),
                                          ["--model", d / "m", "--revision", "step2000", "--tokens", t])[1],
                         "revision 'step2000' not found"),
    "no config.json": (lambda c, t, d: ((d / "empty_model").mkdir(), ["--model", d / "empty_model", "--tokens", t])[1],
                       "no config.json"),
    "unknown protocol": (lambda c, t, d: ["--model", c, "--tokens", t, "--protocols", "replacement,averaged"],
                         "unknown protocol 'averaged'"),
    "unknown pair set": (lambda c, t, d: ["--model", c, "--tokens", t, "--pairs", "neighbours"],
                         "unknown pair set 'neighbours'"),
    "token array too long": (lambda c, t, d: ["--model", c, "--tokens",
                                              _save_tokens(d / "long.npy", np.zeros((2, MAX_POS + 1)))],
                             f"seq_len {MAX_POS + 1} exceeds the model's {MAX_POS} positions"),
    "seq-len too long": (lambda c, t, d: ["--model", c, "--n-seqs", 2, "--seq-len", MAX_POS + 1, "--min-tokens", 4,
                                          "--text-file", write_text(d / "c.txt", corpus(10, seed=1, min_len=5))],
                         f"seq_len {MAX_POS + 1} exceeds the model's {MAX_POS} positions"),
    "token id outside vocabulary": (lambda c, t, d: ["--model", c, "--tokens",
                                                     _save_tokens(d / "oov.npy", [[1, 2, VOCAB]])],
                                    f"token id {VOCAB}"),
    "missing token file": (lambda c, t, d: ["--model", c, "--tokens", d / "none.npy"], "does not exist"),
    "empty text file": (lambda c, t, d: ((d / "e.txt").write_text("\n\n"),
                                         ["--model", c, "--text-file", d / "e.txt"])[1], "is empty"),
    "too few paragraphs": (lambda c, t, d: ["--model", c, "--n-seqs", 8, "--min-tokens", 16, "--text-file",
                                            write_text(d / "s.txt", corpus(20, seed=2, min_len=2, max_len=10))],
                           "paragraphs with at least 16 tokens; 8 are needed"),
    "empty dataset": (lambda c, t, d: ["--model", c, "--dataset", _local_dataset(d / "ds"), "--split", "test"],
                      "is empty"),
    "no adapter": (lambda c, t, d: ["--model", _gpt_neo_checkpoint(d / "gpt-neo"), "--tokens", t],
                   "architecture 'gpt_neo'"),
    "non-finite weights": (lambda c, t, d: ["--model", _nan_block_checkpoint(d / "nan"), "--tokens", t],
                           "weight tensor 'model.layers.1.mlp.down_proj.weight' of "),
    "non-finite base": (lambda c, t, d: ["--model", _overflow_base_checkpoint(d / "inf-base"), "--tokens", t],
                        "the base model produced non-finite logits: the residual stream is first non-finite "
                        "after block 1"),
    "non-finite variant": (lambda c, t, d: ["--model", _overflow_checkpoint(d / "inf"), "--tokens", t,
                                            "--protocols", "deletion"],
                           "variant deletion:0: produced non-finite logits"),
    "truncated safetensors": (lambda c, t, d: ["--model", _truncated_checkpoint(c, d / "trunc"), "--tokens", t],
                              "truncated"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input(case, ckpt, tokens, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))
    if "datasets" in sys.modules:
        monkeypatch.setattr(sys.modules["datasets"].config, "HF_DATASETS_CACHE", tmp_path / "hf_datasets")
    build, match = BAD[case]
    args = build(ckpt, tokens, tmp_path)
    out = tmp_path / "out" / "probe.parquet"
    rc, _, err = run_cli(capsys, *args, "--device", "cpu", "--out", out)
    assert_clean_failure(rc, err, out, match)


def test_overflow_model_base_is_finite_and_only_some_variants_fail():
    """The non-finite-variant fixture really isolates the failure to variants where block 0 has not run."""
    from swapkl.model.engine import ProbeEngine
    from swapkl.errors import SwapKLError
    from swapkl.probes.protocols.block_deletion import deletion
    from swapkl.probes.protocols.interchange import interchange
    from swapkl.probes.protocols.replacement import replacement

    engine = ProbeEngine(variant_only_overflow_model())
    state = engine.base_pass(random_tokens(VOCAB, 2, 8), torch.ones(2, 8, dtype=torch.long))
    for ok in (deletion(1, L), replacement(1, 0, L), interchange(1, 2, L)):
        assert torch.isfinite(engine.variant_seq_stats(state, ok).kl_sum).all()
    for bad in (deletion(0, L), replacement(0, 2, L), interchange(0, 3, L)):
        with pytest.raises(SwapKLError, match=bad.key):
            engine.variant_seq_stats(state, bad)


# -- as a subprocess -------------------------------------------------------------------------

def test_console_script_subprocess(ckpt, tokens, tmp_path):
    assert VENV_SWAPKL.exists(), VENV_SWAPKL
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = tmp_path / "sub.parquet"
    ok = subprocess.run([str(VENV_SWAPKL), "probe", "--model", str(ckpt), "--tokens", str(tokens), "--protocols",
                         "interchange", "--out", str(out)],
                        capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert len(pq.read_table(out)) == 1 + (L - 1)
    bad_out = tmp_path / "bad.parquet"
    bad = subprocess.run([str(VENV_SWAPKL), "probe", "--model", str(ckpt), "--tokens", str(tokens), "--pairs",
                          "within:0", "--out", str(bad_out)], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["swapkl: error: unknown pair set 'within:0': expected 'adjacent', "
                                               "'within:K' (K>=1) or 'all'"]
    assert not bad_out.exists()


def test_a_training_runs_folder_is_named_as_revisions(tmp_path, capsys):
    """A folder of step* checkpoints (the demo's training runs) is one model's revisions: the error names them
    and --revision, not a missing config.json (issue 50)."""
    from bad_inputs_doc import HEADING_50, assert_listed

    run = tmp_path / "run"
    for step in (0, 10, 20, 30, 400):
        (run / f"step{step}").mkdir(parents=True)
        (run / f"step{step}" / "config.json").write_text("{}")
    code = main(["probe", "--model", str(run), "--tokens", str(tmp_path / "t.npy"), "--out", str(tmp_path / "p.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    message = err[-1].removeprefix("swapkl: error: ")
    assert code == 2 and message == (f"model path {str(run)!r} holds revisions (step0, step10, step20, step30 and 1 "
                                     "more), not one checkpoint: name one with --revision")
    assert_listed(message, HEADING_50, model=str(run))
