"""Resuming a killed probe from its progress file: nothing finished is recomputed, nothing corrupt
is trusted, and the result is byte-identical to an uninterrupted run."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from swapkl.data.data_spec import DataSpec
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from crash import crash_after
from tiny_models import random_tokens, tiny_model

RESUMED = re.compile(r"resuming from (\S+): (\d+) finished \(batch, variant\) records")
# the log's line after a probe: model runs (one variant or the base model on one batch, the progress bar's unit)
# computed and taken over, and the progress-file records taken over (a base record per file and a representation
# record per batch besides the variants' records)
COMPUTED = re.compile(r"computed (\d+) of (\d+) model runs \(one variant or the base model on one batch\); (\d+) "
                      r"taken over from the progress file \((\d+) records\)")


def complete_records(path: Path) -> int:
    """Newline-terminated records after the header (what a resumed run may take over)."""
    return max(path.read_bytes().count(b"\n") - 1, 0)


def assert_same_parquet(a: Path, b: Path) -> None:
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
    assert a.read_bytes() == b.read_bytes()


# ----------------------------------------------------------------------------------------- SIGKILL


@pytest.mark.slow
def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path):
    """8 blocks, all pairs, 3 protocols + representation: 94 results per batch, 4 batches; killed
    in the second batch.

    The run is SIGKILLed once some results are on disk, then started again with the same
    arguments. It must take over exactly the records that were complete at the kill, compute
    only the rest, and write the same bytes as a run that was never interrupted.
    """
    model = tmp_path / "model"
    tiny_model("gpt_neox", n_layers=8).save_pretrained(model)
    tokens = tmp_path / "tokens.npy"
    np.save(tokens, random_tokens(97, 8, 16).numpy())
    progress = tmp_path / "progress" / "probe.jsonl"

    def argv(tag, progress_file=None):
        a = [sys.executable, "-m", "swapkl", "probe", "--model", str(model), "--tokens", str(tokens),
             "--pairs", "all", "--batch-size", "2",
             "--out", str(tmp_path / tag / "probe.parquet"), "--repr-out", str(tmp_path / tag / "repr.parquet")]
        return a + (["--progress-file", str(progress_file)] if progress_file else [])

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    run = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the uninterrupted reference runs alongside the run that gets killed
    reference = subprocess.Popen(argv("reference"), **run)
    victim = subprocess.Popen(argv("resumed", progress), **run)
    deadline = time.monotonic() + 240
    while not (progress.exists() and complete_records(progress) >= 120):
        assert victim.poll() is None, "the probe ended before it could be killed:\n" + victim.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL
    assert not (tmp_path / "resumed" / "probe.parquet").exists()
    done = complete_records(progress)
    print(f"killed after {done} of {4 * 94} records")
    assert 120 <= done < 4 * 94

    resumed = subprocess.run(argv("resumed", progress), timeout=300, **run)
    assert resumed.returncode == 0, resumed.stderr
    assert reference.wait(timeout=300) == 0, reference.stderr.read()
    m = RESUMED.search(resumed.stderr)
    assert m and m.group(1) == str(progress) and int(m.group(2)) == done
    runs, total, taken, records = map(int, COMPUTED.search(resumed.stderr).groups())
    assert (total, records) == (4 * 93, done)  # 93 model runs per batch: 94 records less its representation record
    assert runs + taken == total and done - 2 * 4 <= taken <= done  # a base run counts once its repr record is in
    assert not progress.exists()  # removed once the results are written
    assert_same_parquet(tmp_path / "resumed" / "probe.parquet", tmp_path / "reference" / "probe.parquet")
    assert_same_parquet(tmp_path / "resumed" / "repr.parquet", tmp_path / "reference" / "repr.parquet")


# ----------------------------------------------------------------------------------------- in-process
# A crash is injected after a number of variants; the progress file it leaves is then damaged.

N_LAYERS, N_SEQS, BATCH = 4, 6, 2
N_VARIANTS = 1 + 2 * 6 + 6 + 4  # base, replacement both ways, interchange and deletion over 6 pairs
TOTAL = (N_SEQS // BATCH) * (N_VARIANTS + 1)  # + the representation record of each batch


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    model = root / "model"
    tiny_model("llama", n_layers=N_LAYERS).save_pretrained(model)
    tokens = root / "tokens.npy"
    np.save(tokens, random_tokens(97, N_SEQS, 10).numpy())
    kw = dict(pairs="all", data=DataSpec(tokens=str(tokens)), batch_size=BATCH)
    clean = root / "clean"
    run_probe(ProbeJob(model=str(model), out=str(clean / "probe.parquet"), repr_out=str(clean / "repr.parquet"), **kw))
    return model, kw, clean


def probe(setup, folder: Path, progress: Path):
    model, kw, _ = setup
    run_probe(ProbeJob(model=str(model), out=str(folder / "probe.parquet"), repr_out=str(folder / "repr.parquet"),
                       progress_path=str(progress), **kw))


def crashed_progress(setup, tmp_path, monkeypatch, after: int) -> Path:
    """Run until ``after`` variants were computed, then crash; returns the progress file."""
    progress = tmp_path / "progress.jsonl"
    with crash_after(monkeypatch, after):
        probe(setup, tmp_path / "crashed", progress)
    assert not (tmp_path / "crashed" / "probe.parquet").exists()
    return progress


def computed(caplog) -> tuple[int, int, int]:
    """(records computed, records in all, records taken over) of the resumed run; its model runs are checked
    against them: one per record, less each batch's representation record."""
    runs, total, taken, records = map(int, COMPUTED.search(caplog.text).groups())
    n_batches = N_SEQS // BATCH
    assert runs + taken == total == TOTAL - n_batches
    assert records - 2 * n_batches <= taken <= records
    return TOTAL - records, TOTAL, records


def check_result(setup, folder: Path) -> None:
    clean = setup[2]
    assert_same_parquet(folder / "probe.parquet", clean / "probe.parquet")
    assert_same_parquet(folder / "repr.parquet", clean / "repr.parquet")


def test_crash_then_resume(setup, tmp_path, monkeypatch, caplog):
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=30)
    lines = progress.read_text().splitlines()
    assert len(lines) == 1 + 30 + 2 * 2  # header, 30 variants, the base and repr records of 2 batches
    caplog.set_level(logging.INFO)
    probe(setup, tmp_path / "resumed", progress)
    assert computed(caplog) == (TOTAL - 34, TOTAL, 34)
    assert not progress.exists()
    check_result(setup, tmp_path / "resumed")


def test_unterminated_last_line_is_dropped(setup, tmp_path, monkeypatch, caplog):
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=20)
    raw = progress.read_bytes()
    n_records = raw.count(b"\n") - 1
    last = raw.rstrip(b"\n").rsplit(b"\n", 1)[1]
    progress.write_bytes(raw[: len(raw) - len(last) // 2 - 1])  # the last record cut in half, no newline
    caplog.set_level(logging.INFO)
    probe(setup, tmp_path / "resumed", progress)
    assert "dropping an unterminated last record" in caplog.text
    assert computed(caplog) == (TOTAL - (n_records - 1), TOTAL, n_records - 1)
    check_result(setup, tmp_path / "resumed")


def flip_digit(raw: bytes) -> bytes:
    """Change one digit inside the 5th record (a plausible bit rot that still parses as JSON)."""
    lines = raw.split(b"\n")
    line = lines[5]
    k = line.index(b'"kl_sum": [') + len(b'"kl_sum": [') + 3
    while not chr(line[k]).isdigit():
        k += 1
    lines[5] = line[:k] + str((int(chr(line[k])) + 1) % 10).encode() + line[k + 1:]
    return b"\n".join(lines)


def doubled_value(raw: bytes) -> bytes:
    """A record whose value changed but whose CRC did not (a tampered or mis-written record)."""
    lines = raw.split(b"\n")
    rec = json.loads(lines[4])
    rec["kl_sum"] = [2 * v + 1 for v in rec["kl_sum"]]
    lines[4] = json.dumps(rec, sort_keys=True).encode()
    return b"\n".join(lines)


def other_fingerprint(raw: bytes) -> bytes:
    header, rest = raw.split(b"\n", 1)
    return json.dumps({**json.loads(header), "fingerprint": "0" * 64}).encode() + b"\n" + rest


def truncated_middle(raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]
    return b"\n".join(lines)


CORRUPTIONS = {
    "flipped digit": (flip_digit, "is corrupt (line 6: checksum mismatch)"),
    "changed value, stale CRC": (doubled_value, "is corrupt (line 5: checksum mismatch)"),
    "cut record in the middle": (truncated_middle, "is corrupt (line 4:"),
    "other run's fingerprint": (other_fingerprint, "belongs to another run"),
    "header only, garbage record": (lambda raw: raw.split(b"\n", 1)[0] + b"\n{not json\n", "is corrupt (line 2:"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_progress_is_discarded(name, setup, tmp_path, monkeypatch, caplog):
    damage, warning = CORRUPTIONS[name]
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=12)
    progress.write_bytes(damage(progress.read_bytes()))
    caplog.set_level(logging.INFO)
    probe(setup, tmp_path / "resumed", progress)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "swapkl.probes.resume"]
    assert len(warnings) == 1 and str(progress) in warnings[0] and warning in warnings[0]
    assert computed(caplog) == (TOTAL, TOTAL, 0)  # nothing from the damaged file was used
    assert "resuming from" not in caplog.text
    check_result(setup, tmp_path / "resumed")


def test_progress_of_other_settings_is_not_reused(setup, tmp_path, monkeypatch, caplog):
    """Same files, other batch size: the numbers would be the same but the records do not line up."""
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=12)
    model, kw, _ = setup
    caplog.set_level(logging.INFO)
    run_probe(ProbeJob(model=str(model), out=str(tmp_path / "other.parquet"), progress_path=str(progress),
                       **dict(kw, batch_size=3)))
    assert "belongs to another run" in caplog.text
    assert "resuming from" not in caplog.text


def test_progress_of_other_code_is_not_reused(setup, tmp_path, monkeypatch, caplog):
    """An edit of swapkl between the kill and the restart (same version number) invalidates the progress."""
    from swapkl.tables import provenance

    progress = crashed_progress(setup, tmp_path, monkeypatch, after=12)
    monkeypatch.setattr(provenance, "source_sha256", lambda: "e" * 64)
    caplog.set_level(logging.INFO)
    probe(setup, tmp_path / "resumed", progress)
    assert "belongs to another run" in caplog.text
    assert computed(caplog) == (TOTAL, TOTAL, 0)


def test_progress_of_an_edited_config_is_not_reused(setup, tmp_path, monkeypatch, caplog):
    """config.json edited between the kill and the restart (layer_norm_eps, same weights): nothing stale
    is taken over, and the result equals a clean run of the edited checkpoint."""
    import shutil

    model, kw, _ = setup
    edited = tmp_path / "edited"
    shutil.copytree(model, edited)
    progress = crashed_progress((edited, kw, None), tmp_path, monkeypatch, after=12)
    cfg = json.loads((edited / "config.json").read_text())
    cfg["rms_norm_eps"] = 0.5
    (edited / "config.json").write_text(json.dumps(cfg))
    caplog.set_level(logging.INFO)
    run_probe(ProbeJob(model=str(edited), out=str(tmp_path / "resumed.parquet"), progress_path=str(progress), **kw))
    assert "belongs to another run" in caplog.text
    assert "resuming from" not in caplog.text
    run_probe(ProbeJob(model=str(edited), out=str(tmp_path / "clean.parquet"), **kw))
    assert_same_parquet(tmp_path / "resumed.parquet", tmp_path / "clean.parquet")


@pytest.mark.parametrize("content", [b"", b"my notes\n", bytes(range(256)) * 4 + b"\n",
                                     b'{"fingerprint": "' + b"0" * 64 + b'"}\n'])
def test_a_file_without_the_progress_header_is_refused_and_kept(setup, tmp_path, content):
    """Empty, text, binary, or a JSON line that lacks swapkl's marker: never read, replaced or deleted."""
    from swapkl.errors import SwapKLError

    foreign = tmp_path / "progress.jsonl"
    foreign.write_bytes(content)
    with pytest.raises(SwapKLError) as e:
        probe(setup, tmp_path / "out", foreign)
    assert str(e.value) == (f"refusing to overwrite progress file '{foreign}': it exists and was not written "
                            "by swapkl")
    assert foreign.read_bytes() == content
    assert not (tmp_path / "out" / "probe.parquet").exists()


def test_the_progress_file_is_born_with_its_header(setup, tmp_path, monkeypatch):
    """A crash right after the first record leaves a file whose first line is the swapkl header."""
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=0)
    header = json.loads(progress.read_text().splitlines()[0])
    assert header["swapkl_progress"] == 1 and len(header["fingerprint"]) == 64
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_progress_file_on_a_file_system_without_hard_links(setup, tmp_path, monkeypatch, caplog):
    """Where os.link fails (EPERM), the file is still created exclusively with its header, and resumes."""
    import errno

    from swapkl.probes import resume as progress_module

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(progress_module.os, "link", no_links)
    progress = crashed_progress(setup, tmp_path, monkeypatch, after=12)
    assert json.loads(progress.read_text().splitlines()[0])["swapkl_progress"] == 1
    caplog.set_level(logging.INFO)
    probe(setup, tmp_path / "resumed", progress)
    assert "resuming from" in caplog.text
    check_result(setup, tmp_path / "resumed")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []
