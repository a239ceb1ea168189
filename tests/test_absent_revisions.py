"""A seed-family member whose branch the hub lacks (pythia-410m-seed9 has no step40000): recorded as absent,
passed on by the member's jobs as explicit markers, skipped and listed by the aggregate and the seeds table,
while any other missing branch, and any network error, still fails.

The downloads go through the real huggingface_hub client against the fake hub (tests/fake_hub.py); the
statistics are checked against a hand computation over the members that are present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import requests

from fake_hub import Repo, client_env, folder_files, serve
from swapkl.hub import absence
from swapkl.tables import provenance
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import open_input
from swapkl.hub.download import download_checkpoint
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.tables.schemas import read_table
from swapkl.studies.seeds import seed_statistics
from tiny_models import random_tokens, tiny_model

DOWNLOAD = """
import json, sys
from swapkl.errors import SwapKLError
from swapkl.hub.download import download_checkpoint
for spec in sys.argv[2:]:
    repo, rev, member = spec.split(",")
    try:
        download_checkpoint(repo, rev, f"{sys.argv[1]}/{repo.split('/')[1]}/{rev}", retries=1, member=member or None)
        print(json.dumps({"spec": spec, "error": None}))
    except SwapKLError as e:
        print(json.dumps({"spec": spec, "error": str(e)}))
"""


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    root = tmp_path_factory.mktemp("absent_hub")
    tiny_model("gpt_neox", n_layers=3, seed=0).save_pretrained(root / "w")
    files = folder_files(root / "w")
    repos = [Repo("org/tiny", {"step1": files, "step2": files}), Repo("org/tiny-seed9", {"step1": files})]
    specs = ["org/tiny-seed9,step2,tiny-seed9",  # a member's missing branch: absent
             "org/tiny,step3,",  # not a member: fails
             "org/tiny-seed7,step1,tiny-seed7",  # a member whose repository does not exist: fails
             "org/tiny-seed9,step1,tiny-seed9"]  # a member's branch that exists: downloaded
    with serve(repos, lifetime=120) as (url, _):
        proc = subprocess.run([sys.executable, "-c", DOWNLOAD, str(root / "checkpoints"), *specs],
                              env=client_env(url, root / "hf-home"),
                              capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "checkpoints", {r["spec"]: r["error"] for r in map(json.loads, proc.stdout.splitlines())}


def test_a_members_missing_branch_is_recorded_as_absent(downloads):
    checkpoints, errors = downloads
    assert errors["org/tiny-seed9,step2,tiny-seed9"] is None
    folder = checkpoints / "tiny-seed9" / "step2"
    assert sorted(os.listdir(folder)) == [absence.ABSENT_FILE]
    rec = absence.read_marker(folder)
    assert (rec["model"], rec["model_id"], rec["revision"]) == ("tiny-seed9", "org/tiny-seed9", "step2")
    assert "RevisionNotFound" in rec["reason"]
    assert not (checkpoints / "tiny-seed9" / "step2.partial").exists()
    assert errors["org/tiny-seed9,step1,tiny-seed9"] is None  # the member's other branch is a checkpoint
    assert absence.read_marker(checkpoints / "tiny-seed9" / "step1") is None
    assert (checkpoints / "tiny-seed9" / "step1" / "model.safetensors").is_file()


def test_other_missing_branches_and_repositories_still_fail_in_one_line(downloads):
    checkpoints, errors = downloads
    assert errors["org/tiny,step3,"] == ("download of org/tiny@step3 failed: the hub has no branch, tag or commit "
                                         "'step3' in org/tiny; correct or remove that revision in the model's "
                                         "`revisions`")
    assert not (checkpoints / "tiny" / "step3").exists()
    assert errors["org/tiny-seed7,step1,tiny-seed7"].startswith(
        "download of org/tiny-seed7@step1 failed, not retried: RepositoryNotFoundError")
    assert not (checkpoints / "tiny-seed7" / "step1").exists()


def _http_error(status: int, code: str) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    response.headers["X-Error-Code"] = code
    return requests.HTTPError(f"{status} Client Error.", response=response)


def test_a_network_error_of_a_member_still_fails(tmp_path):
    def unreachable(model_id, revision):
        raise requests.ConnectionError("connection reset by peer")

    with pytest.raises(SwapKLError, match="failed after 2 attempts: ConnectionError"):
        download_checkpoint("org/x", "step2", str(tmp_path / "x"), retries=2, backoff=0.0, member="x",
                            resolve_commit=unreachable, snapshot=lambda **kw: None)
    assert not (tmp_path / "x").exists()

    def missing(model_id, revision):
        raise _http_error(404, "RevisionNotFound")

    download_checkpoint("org/x", "step2", str(tmp_path / "x"), retries=2, backoff=0.0, member="x",
                        resolve_commit=missing, snapshot=lambda **kw: None)
    assert absence.read_marker(tmp_path / "x")["revision"] == "step2"


def test_a_marker_is_never_read_as_data(tmp_path):
    marker = tmp_path / "probe.parquet"
    absence.write_marker(marker, absence.record("m-seed9", "org/m-seed9", "step40000", "RevisionNotFoundError"))
    with pytest.raises(SwapKLError) as err:
        read_table(marker, ["model"], "probe")
    assert str(err.value) == (f"probe file {str(marker)!r} stands for a revision that is absent: org/m-seed9@"
                              "step40000 does not exist on the hub (recorded by the download of a seed-family "
                              "member); it holds no data")
    with pytest.raises(SwapKLError, match="does not exist on the hub"):
        open_input(marker, "representation file")
    data = tmp_path / "data.txt"
    data.write_text("x")
    with pytest.raises(SwapKLError, match="refusing to replace .* not one"):
        absence.write_marker(data, absence.record("m", "o/m", "r", "why"))
    assert data.read_text() == "x"


def test_aggregate_and_seeds_skip_absent_members_and_list_them(tmp_path):
    tokens = tmp_path / "tokens.npy"
    np.save(tokens, random_tokens(97, 3, 8).numpy())
    families = {"fam": {"varies": "both", "members": {"m": 1, "m-seed2": 2, "m-seed9": 9}}}
    probes, reprs = [], []
    for model, seed in families["fam"]["members"].items():
        folder = tmp_path / "ck" / model / "step1"
        if seed == 9:  # the hub has no step1 of seed 9: its download recorded it, its jobs pass it on
            absence.write_checkpoint_marker(folder, absence.record(model, f"org/{model}", "step1", "404"))
        else:
            tiny_model("gpt_neox", n_layers=3, seed=seed).save_pretrained(folder)
        for protocol in ("replacement", "interchange", "deletion"):
            out = tmp_path / f"{model}.{protocol}.parquet"
            repr_out = tmp_path / f"{model}.repr.npy" if protocol == "deletion" else None
            outputs = [out] + ([repr_out] if repr_out else [])
            if not absence.propagate(folder, outputs):
                run_probe(ProbeJob(model=str(folder), out=str(out), protocols=[protocol],
                                   data=DataSpec(tokens=str(tokens)),
                                   device="cpu", repr_out=None if repr_out is None else str(repr_out),
                                   metadata={"model": model, "revision": "step1"}))
            probes.append(out)
        reprs.append(tmp_path / f"{model}.repr.npy")
    assert absence.read_marker(tmp_path / "m-seed9.interchange.parquet")["model"] == "m-seed9"
    out = tmp_path / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=probes, repr_files=reprs, out=str(out),
                           pair_sets={m: ["adjacent"] for m in families["fam"]["members"]}, n_boot=10))
    agg = read_aggregate(out)
    assert set(agg["model"]) == {"m", "m-seed2"}
    absent = provenance.read(str(out))["absent"]
    assert [(r["model"], r["revision"]) for r in absent] == [("m-seed9", "step1")]
    seeds = seed_statistics(agg, families, absent=absent)
    fam = seeds[seeds["kind"] == "family"].iloc[0]
    assert list(fam["seeds"]) == [1, 2] and list(fam["absent_seeds"]) == [9] and fam["n_seeds"] == 2
    s = agg[(agg["kind"] == "summary") & (agg["pair_set"] == "adjacent")]
    assert fam["gap_seed_mean"] == pytest.approx(s["gap_mean"].mean(), rel=1e-12)  # over the present seeds only
    with pytest.raises(SwapKLError, match="both in the aggregate and recorded as absent"):
        seed_statistics(agg, families, absent=[absence.record("m-seed2", "org/m-seed2", "step1", "404")])
