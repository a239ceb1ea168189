"""One probe job, one file per protocol (the workflow's rule probe_checkpoint): each file equals what a run of
that protocol alone writes (rows and provenance), with one base pass shared; a killed job resumes per protocol,
from its own progress files or from those of the single-protocol runs. The same job measures the per-pair
covariates on its load of the checkpoint, as their own job would."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.probes.covariates import run_covariates
from swapkl.tables import provenance
from crash import crash_after
from tiny_models import random_tokens, tiny_model

PROTOCOLS = ("replacement", "interchange", "deletion")
# model runs computed, in all and taken over, then the progress-file records taken over (tests/test_resume.py)
COMPUTED = re.compile(r"computed (\d+) of (\d+) model runs \(one variant or the base model on one batch\); (\d+) "
                      r"taken over from the progress file \((\d+) records\)")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny model, its windows, and the files of one single-protocol run per protocol (deletion's with the
    representation file, as the workflow ran them)."""
    root = tmp_path_factory.mktemp("per_protocol")
    model = root / "model"
    tiny_model("llama", n_layers=4).save_pretrained(model)
    tokens = root / "tokens.npy"
    np.save(tokens, random_tokens(97, 6, 10).numpy())
    kw = dict(model=str(model), pairs="all", data=DataSpec(tokens=str(tokens)), batch_size=2,
              metadata={"model": "tiny", "revision": "step1", "config_sha256": "c" * 64})
    single = root / "single"
    for p in PROTOCOLS:
        run_probe(ProbeJob(out=str(single / f"{p}.parquet"), protocols=(p,), **kw,
                          repr_out=str(single / "repr.parquet") if p == "deletion" else None))
    return kw, single


def joint(kw, folder: Path, protocols=PROTOCOLS, progress: bool = False, repr_out: bool = True, **more) -> None:
    run_probe(ProbeJob(out={p: str(folder / f"{p}.parquet") for p in protocols}, protocols=protocols, **kw, **more,
                      repr_out=str(folder / "repr.parquet") if repr_out else None,
                      progress_path={p: str(folder / f"{p}.progress.jsonl") for p in protocols} if progress else None))


def assert_same_file(a: Path, b: Path) -> None:
    """Same table and the same provenance (so the same rows, row order, metadata and protocol list)."""
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
    assert provenance.read(str(a)) == provenance.read(str(b))


def assert_same_as_single(folder: Path, single: Path, protocols=PROTOCOLS, repr_out: bool = True,
                          extra=()) -> None:
    assert sorted(p.name for p in folder.glob("*.parquet")) == sorted(
        [f"{p}.parquet" for p in protocols] + (["repr.parquet"] if repr_out else []) + list(extra))
    for p in protocols:
        assert_same_file(folder / f"{p}.parquet", single / f"{p}.parquet")
        assert provenance.read(str(folder / f"{p}.parquet"))["protocols"] == [p]
    if repr_out:
        assert_same_file(folder / "repr.parquet", single / "repr.parquet")


def test_one_job_writes_each_protocols_file_as_its_own_run(setup, tmp_path, monkeypatch, caplog):
    kw, single = setup
    base_passes = []
    real = ProbeEngine.base_pass
    monkeypatch.setattr(ProbeEngine, "base_pass", lambda self, *a, **k: base_passes.append(1) or real(self, *a, **k))
    caplog.set_level(logging.INFO)
    joint(kw, tmp_path)
    assert len(base_passes) == 3  # one per batch, for the three files together
    assert_same_as_single(tmp_path, single)
    per_batch = 1 + 2 * 6 + 6 + 4  # one base run for the three files, and each file's variants
    assert tuple(map(int, COMPUTED.search(caplog.text).groups())) == (3 * per_batch, 3 * per_batch, 0, 0)


def test_without_deletion_the_representation_goes_with_the_first_protocol(setup, tmp_path):
    kw, single = setup
    joint(kw, tmp_path, protocols=("replacement", "interchange"), repr_out=False)
    assert_same_as_single(tmp_path, single, protocols=("replacement", "interchange"), repr_out=False)
    joint(kw, tmp_path / "with_repr", protocols=("replacement", "interchange"))
    with_repr = provenance.read(str(tmp_path / "with_repr" / "repr.parquet"))
    assert with_repr == provenance.read(str(tmp_path / "with_repr" / "replacement.parquet"))


def test_a_killed_job_resumes_each_protocol_from_its_progress_file(setup, tmp_path, monkeypatch, caplog):
    kw, single = setup
    with crash_after(monkeypatch, 30):
        joint(kw, tmp_path, progress=True)
    assert not list(tmp_path.glob("*.parquet"))
    kept = {p: json.loads(line) for p in PROTOCOLS
            for line in (tmp_path / f"{p}.progress.jsonl").read_text().splitlines()[1:2]}
    assert set(kept) == set(PROTOCOLS)  # each protocol's file holds at least the first batch's base record
    records = sum(len((tmp_path / f"{p}.progress.jsonl").read_text().splitlines()) - 1 for p in PROTOCOLS)
    caplog.set_level(logging.INFO)
    joint(kw, tmp_path, progress=True)
    runs, total, taken, taken_records = map(int, COMPUTED.search(caplog.text).groups())
    assert taken_records == records and runs + taken == total == 3 * (1 + 2 * 6 + 6 + 4)
    assert records - 4 * 3 <= taken <= records  # a base record per file and deletion's representation record
    assert not list(tmp_path.glob("*.progress.jsonl"))  # removed once the files are written
    assert_same_as_single(tmp_path, single)


def test_the_job_takes_over_a_killed_single_protocol_run(setup, tmp_path, monkeypatch, caplog):
    """The progress file of a protocol's own run (the same path in the workflow) is that protocol's file here."""
    kw, single = setup
    progress = tmp_path / "interchange.progress.jsonl"
    with crash_after(monkeypatch, 5):
        run_probe(ProbeJob(out=str(tmp_path / "interchange.parquet"), protocols=("interchange",),
                           progress_path=str(progress),
                          **kw))
    records = len(progress.read_text().splitlines()) - 1
    caplog.set_level(logging.INFO)
    joint(kw, tmp_path, progress=True)
    assert f"resuming from {progress}: {records} finished" in caplog.text
    assert int(COMPUTED.search(caplog.text).group(4)) == records
    assert_same_as_single(tmp_path, single)


@pytest.mark.parametrize("options", [{}, {"rope": "off"}])
def test_the_covariates_are_those_of_their_own_job(setup, tmp_path, monkeypatch, options):
    """On the probe's load (one load in all), or on a load of their own where the probe's differs from theirs."""
    from swapkl.probes import probe

    kw, single = setup
    loads = []
    real = probe.load_model
    monkeypatch.setattr(probe, "load_model", lambda *a, **k: loads.append(k) or real(*a, **k))
    joint(kw, tmp_path / "joint", covariates_out=str(tmp_path / "joint" / "covariates.parquet"), **options)
    assert len(loads) == 1 + bool(options)
    run_covariates(kw["model"], str(tmp_path / "own.parquet"), pairs=kw["pairs"], data=kw["data"],
                   batch_size=kw["batch_size"], metadata=kw["metadata"])
    assert_same_file(tmp_path / "joint" / "covariates.parquet", tmp_path / "own.parquet")
    if not options:  # (RoPE off changes the probe files)
        assert_same_as_single(tmp_path / "joint", single, extra=["covariates.parquet"])


@pytest.mark.parametrize("out, progress, message", [
    ({"replacement": "a.parquet"}, None, "out names the protocols replacement, not the ones measured: "
                                         "replacement, interchange, deletion"),
    ({p: f"{p}.parquet" for p in PROTOCOLS}, "p.jsonl", "progress_path: one file per protocol of out"),
    ({p: f"{p}.parquet" for p in PROTOCOLS}, {"averaging": "p.jsonl"}, "progress_path: one file per protocol of out"),
    ("all.parquet", {"deletion": "p.jsonl"}, "progress_path is one file per protocol, but out is one file"),
    ({p: "same.parquet" for p in PROTOCOLS}, None, "`out[replacement]` and `out[interchange]` name the same file"),
    ({p: f"{p}.parquet" for p in PROTOCOLS}, None, "`out[deletion]` and `covariates_out` name the same file"),
])
def test_files_per_protocol_are_checked_before_the_run(setup, tmp_path, monkeypatch, out, progress, message):
    kw, _ = setup
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("swapkl.probes.probe.load_model", lambda *a, **k: pytest.fail("loaded a model"))
    with pytest.raises(SwapKLError) as e:
        run_probe(ProbeJob(model=kw["model"], out=out, protocols=PROTOCOLS, progress_path=progress, data=kw["data"],
                           covariates_out="deletion.parquet"))
    assert message in str(e.value)
