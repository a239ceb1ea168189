"""Every Parquet file names the code that wrote it (swapkl version and source hash) and the sha256 of each input
file it was computed from (seeds: tests/test_seeds.py, covariates: tests/test_covariate_stats.py); nullable integer columns read back as integers with dtype_backend="numpy_nullable"."""

from __future__ import annotations

import hashlib

import pandas as pd
import pyarrow as pa

from swapkl.tables import provenance
from swapkl.tables.parquet_io import write_parquet
from test_figures import agg_path  # noqa: F401  (fixture)


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_every_file_records_version_and_source_hash(tmp_path):
    out = tmp_path / "t.parquet"
    write_parquet(pa.table({"x": [1]}), str(out), {"kind": "test"})
    prov = provenance.read(str(out))
    assert prov["swapkl_source_sha256"] == provenance.source_sha256() and len(prov["swapkl_source_sha256"]) == 64
    assert prov["swapkl_version"] and prov["kind"] == "test"


def test_aggregate_records_its_inputs(agg_path):  # noqa: F811
    prov = provenance.read(str(agg_path))
    assert len(prov["input_sha256"]) == 16  # 4 checkpoints x (3 probe protocols + repr)
    assert all(_sha(p) == h for p, h in prov["input_sha256"].items())
    assert prov["swapkl_source_sha256"] == provenance.source_sha256()


def test_derived_provenance_hashes_each_input(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"alpha")
    b.write_bytes(b"beta")
    prov = provenance.derived([a, None, b], kind="x")
    assert prov["input_sha256"] == {str(a): hashlib.sha256(b"alpha").hexdigest(),
                                    str(b): hashlib.sha256(b"beta").hexdigest()}
    assert prov["kind"] == "x" and "swapkl_source_sha256" in prov


def test_nullable_integers_read_back_as_integers(agg_path):  # noqa: F811
    plain = pd.read_parquet(agg_path)
    typed = pd.read_parquet(agg_path, dtype_backend="numpy_nullable")
    assert plain["layer_i"].dtype == "float64"  # null on summary rows: numpy has no integer NaN
    assert str(typed["layer_i"].dtype) == "Int64" and typed["layer_i"].isna().any()


def test_provenance_text_indents_long_values_one_item_per_line():
    """`swapkl provenance` printed an aggregate's `inputs` as one 35 kB line; long lists and mappings are now
    indented JSON under their key (short ones stay on one line), and `--compact` keeps the one-line form."""
    import json

    inputs = [{"file": f"results/probes/m/step{k}/replacement.parquet", "role": "probe",
               "provenance": {"weights_sha256": "a" * 64, "dtype": "float32"}} for k in range(3)]
    prov = {"inputs": inputs, "n_boot": 1000, "pair_sets": {"m": ["adjacent"]}}
    text = provenance.format_text(prov)
    lines = text.splitlines()
    assert lines[0] == "inputs     ["
    assert len(lines) > 20 and max(len(line) for line in lines) < 110  # the one-line form: 400 characters
    start = lines.index("n_boot     1000")
    assert json.loads("\n".join(line[len("inputs     "):] for line in lines[:start])) == inputs
    assert lines[start + 1] == 'pair_sets  {"m": ["adjacent"]}'
    compact = provenance.format_text(prov, compact=True).splitlines()
    assert len(compact) == 3 and json.loads(compact[0][len("inputs     "):]) == inputs


def test_provenance_piped_into_head_stops_quietly(tmp_path):
    """`swapkl provenance F | head -1` closes the pipe after one line: the command stops without a traceback."""
    import subprocess
    import sys

    out = tmp_path / "t.parquet"
    write_parquet(pa.table({"x": [1]}), str(out), {"kind": "test", "inputs": [{"file": f"f{k}"} for k in range(20000)]})
    run = subprocess.run(f"{sys.executable} -m swapkl provenance {out} | head -1", shell=True, capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() and run.stderr == "", run.stderr
