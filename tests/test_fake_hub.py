"""Downloads from a fake hub on 127.0.0.1 (tests/fake_hub.py), through the real huggingface_hub client.

One repository with four branches as the real hub has them for pythia: ``main``; ``step1`` serving
``main``'s weights under its own commit (a duplicated branch); ``step0`` with other weights; ``bad``
whose shard arrives corrupt; and ``step2`` missing. Checked: every revision is pinned to the commit the
hub names; the duplicate is recognised from the hub's sha256 metadata before its shard is fetched, and
recorded; a missing branch fails alone in one line naming it; a corrupt shard is caught after the
download; the probe results carry the commit and the aggregate marks the duplicate ``duplicate_of``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from fake_hub import Repo, client_env, folder_files, serve
from swapkl.tables import provenance
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.data.data_spec import DataSpec
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from tiny_models import random_tokens, tiny_model

REVISIONS = ["main", "step1", "step0", "bad", "step2"]
DOWNLOAD = """
import json, sys
from swapkl.errors import SwapKLError
from swapkl.hub.download import download_checkpoint
for rev in sys.argv[2:]:
    try:
        download_checkpoint("org/tiny", rev, f"{sys.argv[1]}/{rev}", retries=1)
        print(json.dumps({"revision": rev, "error": None}))
    except SwapKLError as e:
        print(json.dumps({"revision": rev, "error": str(e)}))
"""


@pytest.fixture(scope="module")
def hub_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake_hub")
    for seed in (0, 1, 2):
        tiny_model("gpt_neox", n_layers=3, seed=seed).save_pretrained(root / f"weights{seed}")
    final, init, other = (folder_files(root / f"weights{seed}") for seed in (0, 1, 2))
    corrupt = bytearray(other["model.safetensors"])
    corrupt[-1] ^= 0xFF  # same size, one flipped byte
    repo = Repo("org/tiny", {"main": final, "step1": dict(final), "step0": init, "bad": other},
                served={("bad", "model.safetensors"): bytes(corrupt)})
    with serve([repo], lifetime=240) as (url, requests):
        proc = subprocess.run([sys.executable, "-c", DOWNLOAD, str(root / "checkpoints"), *REVISIONS],
                              env=client_env(url, root / "hf-home"),
                              capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {r["revision"]: r["error"] for r in map(json.loads, proc.stdout.splitlines())}
    return root / "checkpoints", repo, results, list(requests)


def _source(checkpoints: Path, revision: str) -> dict:
    return json.loads((checkpoints / revision / "swapkl_source.json").read_text())


def test_each_revision_is_pinned_to_the_hubs_commit(hub_run):
    checkpoints, repo, results, _ = hub_run
    for rev in ("main", "step1", "step0"):
        assert results[rev] is None
        assert _source(checkpoints, rev)["commit"] == repo.commits[rev]


def test_a_duplicated_branch_is_found_from_the_hub_metadata_and_not_fetched_twice(hub_run):
    checkpoints, repo, _, requests = hub_run
    assert _source(checkpoints, "step1")["duplicate_of"] == "main"
    assert _source(checkpoints, "step0")["duplicate_of"] is None
    shard = "model.safetensors"
    assert ("GET", f"/org/tiny/resolve/{repo.commits['main']}/{shard}") in requests
    assert not [r for r in requests if r[1] == f"/org/tiny/resolve/{repo.commits['step1']}/{shard}"]
    assert (checkpoints / "step1" / shard).read_bytes() == repo.branches["main"][shard]
    assert (checkpoints / "step1" / "config.json").read_bytes() == repo.branches["step1"]["config.json"]


def test_a_missing_branch_fails_alone_in_one_line(hub_run):
    checkpoints, _, results, _ = hub_run
    assert results["step2"] == ("download of org/tiny@step2 failed: the hub has no branch, tag or commit 'step2' in "
                                "org/tiny; correct or remove that revision in the model's `revisions`")
    assert not (checkpoints / "step2").exists() and not (checkpoints / "step2.partial").exists()
    assert results["step0"] is None  # the other branches are unaffected


def test_a_corrupt_shard_is_caught_after_the_download(hub_run):
    checkpoints, repo, results, _ = hub_run
    want = hashlib.sha256(repo.branches["bad"]["model.safetensors"]).hexdigest()
    got = hashlib.sha256(repo.served[("bad", "model.safetensors")]).hexdigest()
    assert results["bad"] == (f"download of org/tiny@bad: weight shard model.safetensors has sha256 {got[:12]}..., the "
                              f"hub lists {want[:12]}...; the file was removed, run again to fetch it anew")
    assert not (checkpoints / "bad").exists()
    assert not (checkpoints / "bad.partial" / "model.safetensors").exists()


def test_results_carry_the_commit_and_the_aggregate_marks_the_duplicate(hub_run, tmp_path):
    checkpoints, repo, _, _ = hub_run
    tokens = tmp_path / "tokens.npy"
    np.save(tokens, random_tokens(97, 2, 8).numpy())
    probes = []
    for rev in ("step0", "step1", "main"):
        probes.append(str(tmp_path / f"{rev}.parquet"))
        run_probe(ProbeJob(model=str(checkpoints / rev), out=probes[-1], data=DataSpec(tokens=str(tokens)),
                           device="cpu",
                           metadata={"model": "tiny", "revision": rev}))
        assert provenance.read(probes[-1])["commit"] == repo.commits[rev]
    out = tmp_path / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=probes, repr_files=[], out=str(out), pair_sets={"tiny": ["adjacent"]},
                           n_boot=10))
    df = read_aggregate(out)
    dup = df.drop_duplicates("revision").set_index("revision")["duplicate_of"].astype(object)
    dup = dup.where(dup.notna(), None).to_dict()
    assert dup == {"step0": None, "step1": None, "main": "step1"}  # main, without a step, sorts after step1
