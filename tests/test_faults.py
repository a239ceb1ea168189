"""Faults: flaky and failing downloads, unwritable results folders, full disks.

Every fault ends in one SwapKLError line (exit code 2 at the CLI) and leaves no partial output; a failed
download keeps only its `.partial` folder, from which the next attempt resumes.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from swapkl import cli
from swapkl.hub import download as hub
from swapkl.tables import parquet_io
from swapkl.probes import resume as progress
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import write_parquet
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from tiny_models import random_tokens, tiny_model

COMMIT = "c0ffee" + "0" * 34


class FakeHub:
    """Stands in for the hub: fails the first ``failures`` calls with ``error``, then writes a checkpoint."""

    def __init__(self, failures: int = 0, error: Exception | None = None, resolve_failures: int = 0):
        self.failures, self.error, self.resolve_failures = failures, error, resolve_failures
        self.calls: list[dict] = []
        self.resolves = 0

    def resolve(self, model_id, revision):
        self.resolves += 1
        if self.resolves <= self.resolve_failures:
            raise ConnectionError("name resolution failed")
        return COMMIT

    def snapshot(self, *, repo_id, revision, local_dir, allow_patterns):
        self.calls.append(dict(repo_id=repo_id, revision=revision, allow_patterns=allow_patterns))
        os.makedirs(local_dir, exist_ok=True)
        # a partial file first, as a real download that breaks off would leave
        Path(local_dir, "model.safetensors").write_bytes(b"partial")
        if len(self.calls) <= self.failures:
            raise self.error
        Path(local_dir, "config.json").write_text("{}")


@pytest.fixture
def waits(monkeypatch):
    """Record the backoff instead of sleeping."""
    slept: list[float] = []
    monkeypatch.setattr(hub.time, "sleep", slept.append)
    return slept


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ----------------------------------------------------------------------------------------- downloads


def test_transient_failures_are_retried_with_exponential_backoff(tmp_path, waits):
    fake = FakeHub(failures=2, error=ConnectionError("connection reset by peer"))
    out = tmp_path / "ckpt" / "step1000"
    hub.download_checkpoint("org/model", "step1000", str(out), retries=5, backoff=1.5,
                            snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert waits == [1.5, 3.0]
    assert len(fake.calls) == 3
    assert all(c["revision"] == COMMIT for c in fake.calls)  # the files come from the resolved commit
    patterns = fake.calls[0]["allow_patterns"]
    assert "*.safetensors" in patterns and not {"*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl"} & set(patterns)
    assert leftovers(tmp_path / "ckpt") == ["step1000"]
    assert json.loads((out / hub.SOURCE_FILE).read_text()) == {
        "model_id": "org/model", "revision": "step1000", "commit": COMMIT, "shards": {}, "duplicate_of": None}


def test_failing_commit_lookup_is_retried_too(tmp_path, waits):
    fake = FakeHub(resolve_failures=1)
    out = tmp_path / "ckpt"
    hub.download_checkpoint("org/model", "main", str(out), retries=3, backoff=2.0,
                            snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert waits == [2.0]
    assert (out / "config.json").exists()


def test_download_that_keeps_failing_gives_up_cleanly(tmp_path, waits):
    fake = FakeHub(failures=99, error=TimeoutError("read timed out\nsecond line of details"))
    out = tmp_path / "ckpt" / "step1000"
    with pytest.raises(SwapKLError) as e:
        hub.download_checkpoint("org/model", "step1000", str(out), retries=4, backoff=2.0,
                                snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert str(e.value) == "download of org/model@step1000 failed after 4 attempts: TimeoutError: read timed out"
    assert waits == [2.0, 4.0, 8.0]
    assert len(fake.calls) == 4
    assert leftovers(tmp_path / "ckpt") == ["step1000.partial"]  # no checkpoint; what was fetched, to resume


class RepositoryNotFoundError(Exception):
    """Named like huggingface_hub's: the repository does not exist (or is private)."""


class RevisionNotFoundError(Exception):
    pass


@pytest.mark.parametrize("error", [RepositoryNotFoundError("404 Client Error\nRepository Not Found for url"),
                                   RevisionNotFoundError("404 Client Error: no revision step7")])
def test_permanent_errors_are_not_retried(tmp_path, waits, error):
    fake = FakeHub(failures=99, error=error)
    with pytest.raises(SwapKLError) as e:
        hub.download_checkpoint("org/model", "step7", str(tmp_path / "ckpt"), retries=5,
                                snapshot=fake.snapshot, resolve_commit=fake.resolve)
    first_line = str(error).splitlines()[0]
    if isinstance(error, RevisionNotFoundError):  # the repository exists: the message names the branch
        assert str(e.value) == ("download of org/model@step7 failed: the hub has no branch, tag or commit 'step7' in "
                                "org/model; correct or remove that revision in the model's `revisions`")
    else:
        assert str(e.value) == f"download of org/model@step7 failed, not retried: {type(error).__name__}: {first_line}"
    assert len(fake.calls) == 1 and waits == []
    assert leftovers(tmp_path) == ["ckpt.partial"]


class HTTPError(Exception):
    """Like huggingface_hub's HfHubHTTPError: carries the hub's response."""

    def __init__(self, status):
        super().__init__(f"{status} Client Error")
        self.response = type("Response", (), {"status_code": status})()


@pytest.mark.parametrize("status", [401, 403, 404])
def test_access_and_missing_answers_are_not_retried(tmp_path, waits, status):
    fake = FakeHub(failures=99, error=HTTPError(status))
    with pytest.raises(SwapKLError, match=f"not retried: HTTPError: {status} Client Error"):
        hub.download_checkpoint("org/model", "main", str(tmp_path / "ckpt"), retries=5,
                                snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert len(fake.calls) == 1 and waits == []


def test_server_errors_are_retried(tmp_path, waits):
    fake = FakeHub(failures=1, error=HTTPError(503))
    hub.download_checkpoint("org/model", "main", str(tmp_path / "ckpt"), retries=5,
                            snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert len(fake.calls) == 2 and waits == [2.0]


def unresolvable_host(model_id, revision):
    """What huggingface_hub raises when the hub's host name does not resolve (httpx wraps the gaierror)."""
    try:
        raise socket.gaierror(-2, "Name or service not known")
    except socket.gaierror as e:
        raise ConnectionError("[Errno -2] Name or service not known") from e


class OfflineModeIsEnabled(ConnectionError):
    """Named like huggingface_hub's: HF_HUB_OFFLINE=1 forbids every request."""


def offline(model_id, revision):
    raise OfflineModeIsEnabled("Cannot reach https://huggingface.co/api/models/org/model: offline mode is enabled")


@pytest.mark.parametrize("resolve", [unresolvable_host, offline], ids=["dns", "offline"])
def test_unreachable_hub_fails_at_once_naming_the_demo(tmp_path, waits, resolve):
    with pytest.raises(SwapKLError) as e:
        hub.download_checkpoint("org/model", "main", str(tmp_path / "ckpt"), retries=5,
                                snapshot=FakeHub().snapshot, resolve_commit=resolve)
    message = str(e.value)
    assert message.startswith("download of org/model@main failed: the model hub is unreachable (")
    assert "make demo" in message and "\n" not in message
    assert waits == [] and leftovers(tmp_path) == []  # nothing fetched, no empty .partial left


def test_interrupted_download_keeps_what_it_fetched(tmp_path, waits):
    fake = FakeHub(failures=1, error=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        hub.download_checkpoint("org/model", "main", str(tmp_path / "ckpt"),
                                snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert leftovers(tmp_path) == ["ckpt.partial"]
    assert (tmp_path / "ckpt.partial" / "model.safetensors").read_bytes() == b"partial"


class ResumingHub:
    """Serves one file of ``size`` bytes, ``chunk`` bytes per call, appending to what ``local_dir`` holds
    (as huggingface_hub resumes a partial file), then fails the call until the file is complete."""

    def __init__(self, size: int, chunk: int):
        self.data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
        self.chunk, self.sent = chunk, 0

    def snapshot(self, *, repo_id, revision, local_dir, allow_patterns):
        path = Path(local_dir, "model.safetensors")
        os.makedirs(local_dir, exist_ok=True)
        have = path.stat().st_size if path.exists() else 0
        piece = self.data[have:have + self.chunk]
        with open(path, "ab") as f:
            f.write(piece)
        self.sent += len(piece)
        if have + len(piece) < len(self.data):
            raise ConnectionError("connection reset by peer")


def test_download_resumes_across_runs_from_the_partial_folder(tmp_path, waits):
    fake = ResumingHub(size=1000, chunk=300)
    out = tmp_path / "ckpt" / "main"
    # first run: two attempts, 600 bytes, then it gives up (as a job that fails and is started again later)
    with pytest.raises(SwapKLError, match="after 2 attempts"):
        hub.download_checkpoint("org/model", "main", str(out), retries=2, snapshot=fake.snapshot,
                                resolve_commit=lambda m, r: COMMIT)
    assert not out.exists() and (tmp_path / "ckpt" / "main.partial" / "model.safetensors").stat().st_size == 600
    # second run resumes at byte 600: every byte crosses the network once
    hub.download_checkpoint("org/model", "main", str(out), retries=5, snapshot=fake.snapshot,
                            resolve_commit=lambda m, r: COMMIT)
    assert (out / "model.safetensors").read_bytes() == fake.data
    assert fake.sent == len(fake.data)
    assert leftovers(tmp_path / "ckpt") == ["main"]


def test_failed_redownload_keeps_the_old_checkpoint(tmp_path, waits):
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "config.json").write_text('{"old": true}')
    (out / hub.SOURCE_FILE).write_text("{}")  # an earlier download by swapkl
    fake = FakeHub(failures=99, error=ConnectionError("down"))
    with pytest.raises(SwapKLError):
        hub.download_checkpoint("org/model", "main", str(out), retries=2,
                                snapshot=fake.snapshot, resolve_commit=fake.resolve)
    assert leftovers(tmp_path) == ["ckpt", "ckpt.partial"] and (out / "config.json").read_text() == '{"old": true}'


@pytest.mark.parametrize("which", ["checkpoint", "staging folder"])
def test_download_never_replaces_a_folder_swapkl_did_not_make(tmp_path, waits, which):
    """A checkpoint folder without swapkl's download record, or a `.partial` folder without swapkl's mark,
    belongs to someone else: refused before anything is fetched, and left as it was."""
    out = tmp_path / "ckpt"
    theirs = out if which == "checkpoint" else tmp_path / "ckpt.partial"
    theirs.mkdir()
    (theirs / "model.safetensors").write_bytes(b"their weights")
    fake = FakeHub()
    with pytest.raises(SwapKLError) as e:
        hub.download_checkpoint("org/model", "main", str(out), snapshot=fake.snapshot, resolve_commit=fake.resolve)
    mark = hub.SOURCE_FILE if which == "checkpoint" else hub.PARTIAL_MARK
    what = "a checkpoint that swapkl downloaded" if which == "checkpoint" else "a download that swapkl started"
    assert str(e.value) == f"refusing to replace '{theirs}': it is not {what} (no {mark} in it)"
    assert fake.calls == [] and leftovers(tmp_path) == [theirs.name]
    assert (theirs / "model.safetensors").read_bytes() == b"their weights"


# ----------------------------------------------------------------------------------------- results folder

PROV = {"test": True}


def small_table() -> pa.Table:
    return pa.table({"x": np.arange(1000, dtype=np.float64)})


def test_results_folder_that_is_a_file(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    with pytest.raises(SwapKLError) as e:
        write_parquet(small_table(), str(blocker / "out.parquet"), PROV)
    assert str(e.value) == f"cannot write to folder '{blocker}': a path component is a file, not a folder"


def test_unwritable_folder_via_permissions(tmp_path, monkeypatch):
    """Root ignores chmod, so the refusal is injected where the temporary file is created."""
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(parquet_io.tempfile, "mkstemp", refuse)
    with pytest.raises(SwapKLError) as e:
        write_parquet(small_table(), str(tmp_path / "out.parquet"), PROV)
    assert str(e.value) == f"cannot write to folder '{tmp_path}': permission denied"
    assert leftovers(tmp_path) == []


def test_disk_full_while_writing(tmp_path, monkeypatch):
    """pyarrow fails half-way (ENOSPC): one line saying so, and the temporary file is gone."""
    def write_half(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1" + b"\0" * 100)
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(parquet_io.pq, "write_table", write_half)
    out = tmp_path / "out.parquet"
    with pytest.raises(SwapKLError) as e:
        write_parquet(small_table(), str(out), PROV)
    assert str(e.value) == f"cannot write '{out}': disk full"
    assert leftovers(tmp_path) == []


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "out.parquet"
    write_parquet(small_table(), str(out), PROV)
    before = out.read_bytes()

    def fail(table, where, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(parquet_io.pq, "write_table", fail)
    with pytest.raises(SwapKLError):
        write_parquet(pa.table({"y": [1]}), str(out), PROV)
    assert out.read_bytes() == before and leftovers(tmp_path) == ["out.parquet"]


@pytest.fixture
def tmpfs(tmp_path):
    """A real 64 KiB tmpfs (needs mount privileges; skipped elsewhere)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()

    mounted = []

    def mount(*options):
        cmd = ["mount", "-t", "tmpfs", "-o", ",".join(("size=64k",) + options), "tmpfs", str(mnt)]
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            r = None
        if r is None or r.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        mounted.append(mnt)
        return mnt

    yield mount
    for m in mounted:
        subprocess.run(["umount", str(m)], capture_output=True, timeout=30)


def test_real_full_disk(tmpfs):
    mnt = tmpfs()
    (mnt / "filler").write_bytes(b"\0" * 60_000)
    with pytest.raises(SwapKLError) as e:
        write_parquet(pa.table({"x": np.random.default_rng(0).random(20_000)}), str(mnt / "out.parquet"), PROV)
    assert str(e.value) == f"cannot write '{mnt / 'out.parquet'}': disk full"
    assert leftovers(mnt) == ["filler"]


def test_real_read_only_folder(tmpfs):
    mnt = tmpfs("ro")
    with pytest.raises(SwapKLError) as e:
        write_parquet(small_table(), str(mnt / "out.parquet"), PROV)
    assert str(e.value) == f"cannot write to folder '{mnt}': read-only file system"


# ----------------------------------------------------------------------------------------- the probe


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    tiny_model("gpt_neox", n_layers=3).save_pretrained(root / "model")
    np.save(root / "tokens.npy", random_tokens(97, 4, 8).numpy())
    return root


def test_probe_checks_its_output_folder_before_computing(tiny, tmp_path, capsys, monkeypatch):
    """An unwritable results folder is reported before the model is even loaded."""
    import swapkl.probes.probe

    monkeypatch.setattr(swapkl.probes.probe, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    blocker = tmp_path / "results"
    blocker.write_text("")
    code = cli.main(["probe", "--model", str(tiny / "model"), "--tokens", str(tiny / "tokens.npy"),
                     "--out", str(blocker / "x" / "probe.parquet")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"swapkl: error: cannot write to folder '{blocker / 'x'}': a path component is a file, not a folder" in err
    assert "Traceback" not in err


def test_probe_on_a_full_disk(tiny, tmp_path, capsys, monkeypatch):
    def full(table, where, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(parquet_io.pq, "write_table", full)
    out = tmp_path / "res" / "probe.parquet"
    progress_file = tmp_path / "progress.jsonl"
    code = cli.main(["probe", "--model", str(tiny / "model"), "--tokens", str(tiny / "tokens.npy"),
                     "--progress-file", str(progress_file), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert [ln for ln in err.splitlines() if "error" in ln] == [f"swapkl: error: cannot write '{out}': disk full"]
    assert leftovers(out.parent) == []
    assert progress_file.exists()  # the measurements survive: a rerun with space only writes the file


def test_progress_file_on_a_full_disk(tiny, tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(progress.os, "fsync", full)
    progress_file = tmp_path / "progress.jsonl"
    with pytest.raises(SwapKLError) as e:
        run_probe(ProbeJob(model=str(tiny / "model"), out=str(tmp_path / "out.parquet"),
                           data=DataSpec(tokens=str(tiny / "tokens.npy")),
                           progress_path=str(progress_file)))
    assert str(e.value) == f"cannot write progress file '{progress_file}': disk full"
    assert not (tmp_path / "out.parquet").exists()
