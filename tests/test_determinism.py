"""Same inputs, same seed, same machine: byte-identical result Parquets from fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pyarrow.parquet as pq

from test_perplexity import char_tokenizer
from tiny_models import tiny_model

TEXT = "\n\n".join(
    f"paragraph {k}: the blocks of a transformer read and write one residual stream, and some of them "
    f"can trade places without much change in what the model predicts next."
    for k in range(12)
)


def test_two_fresh_runs_write_identical_bytes(tmp_path):
    """The demo-style probe (text windows through a tokenizer, bootstrap CIs, representation rows)."""
    model = tmp_path / "model"
    tiny_model("qwen3", n_layers=4).save_pretrained(model)
    char_tokenizer().save_pretrained(model)
    text = tmp_path / "corpus.txt"
    text.write_text(TEXT)

    def start(tag):
        argv = [sys.executable, "-m", "swapkl", "probe", "--model", str(model), "--text-file", str(text),
                "--n-seqs", "6", "--seq-len", "32", "--seed", "3", "--pairs", "within:2", "--batch-size", "4",
                "--out", str(tmp_path / tag / "probe.parquet"), "--repr-out", str(tmp_path / tag / "repr.parquet")]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    runs = [start("a"), start("b")]
    for r in runs:
        _, err = r.communicate(timeout=300)
        assert r.returncode == 0, err

    for name in ("probe.parquet", "repr.parquet"):
        a, b = tmp_path / "a" / name, tmp_path / "b" / name
        assert a.read_bytes() == b.read_bytes(), name
    df = pd.read_parquet(tmp_path / "a" / "probe.parquet")
    assert len(df) == 1 + 2 * 5 + 5 + 4 and df["kl_mean"].notna().all() and (df["kl_mean"] > 0).sum() == len(df) - 1

    # nothing in the provenance changes from run to run: no clock, host, pid or temporary name
    prov = json.loads(pq.read_schema(tmp_path / "a" / "probe.parquet").metadata[b"swapkl"])
    flat = json.dumps(prov)
    assert not {"time", "timestamp", "date", "host", "hostname", "pid", "user"} & set(prov)
    assert str(tmp_path / "a") not in flat  # the output location is not part of the result
