"""End to end through the real workflow against a fake hub (tests/fake_hub.py) on 127.0.0.1: a seed family
whose member seed 9 lacks the branch step2 (as pythia-410m-seed9 lacks step40000). The run completes; the
member's jobs at step2 write markers; the aggregate, the pruning table and the seeds table leave seed 9 out at
step2 and list it; the seed-band figure's note names it. A missing branch of a model outside any seed family
still fails its download in one line naming the branch.

The run leaves out the figures of single checkpoints (PER_CHECKPOINT_FIGURES): only the family's own seed
has them, whose checkpoints all exist, and the demo run (tests/test_workflow_demo.py) draws them all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fake_hub import Repo, client_env, folder_files, serve
from swapkl.hub import absence
from swapkl.tables import provenance
from tiny_models import tiny_model

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
WORDS = [f"w{k}" for k in range(40)]
SEEDS = {"org/tiny": 1, "org/tiny-seed2": 2, "org/tiny-seed9": 9}
PER_CHECKPOINT_FIGURES = ("plot_heatmaps", "plot_deletion_vs_bi", "plot_pruning_agreement", "plot_pruning_cost")


def _word_tokenizer_files(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: k + 2 for k, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(folder)


def _branch(root: Path, name: str, seed: int) -> dict[str, bytes]:
    folder = root / name
    tiny_model("gpt_neox", n_layers=6, seed=seed).save_pretrained(folder)  # the rank figures need 6
    _word_tokenizer_files(folder)
    return folder_files(folder)


def _text(path: Path, n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    paragraphs = [" ".join(WORDS[k] for k in rng.integers(0, len(WORDS), size=rng.integers(20, 30))) for _ in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(paragraphs) + "\n")
    return str(path.relative_to(path.parents[1]))


def _config(work: Path) -> dict:
    valid = _text(work / "data" / "valid.txt", 12, 0)
    test = _text(work / "data" / "test.txt", 12, 1)
    return {
        "models": {"tiny": {
            "source": "org/tiny", "revisions": ["step1", "step2"], "trajectory": True, "covariates": True,
            "pair_sets": ["adjacent"],
            "data": {"text_file": valid, "n_seqs": 4, "seq_len": 16, "min_tokens": 8},
            "prune": {"enabled": True, "revisions": ["step2"], "max_budget": 1, "n_random": 1,
                      "eval": {"text_file": test, "max_words": 200, "window": 16, "stride": 8},
                      "calibration": {"text_file": valid, "n_seqs": 2, "seq_len": 16}},
            "seeds": {"seed": 1, "values": [2, 9], "source": "org/tiny-seed{seed}"}}},
        "probe": {"n_boot": 10},
        "device": "cpu",
    }


def _snakemake(work: Path, config: dict, url: str, *targets: str) -> subprocess.CompletedProcess:
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = client_env(url, work / "hf-home")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--replace-workflow-config", "--configfile", str(path), "--cores", "2", "--resources", "gpu=2",
           "--nolock", *targets]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub_files")
    repos = []
    for repo_id, seed in SEEDS.items():
        branches = {"step1": _branch(root, f"{seed}-1", 10 * seed + 1), "step2": _branch(root, f"{seed}-2", 10 * seed + 2)}
        if seed == 9:
            del branches["step2"]  # the member's missing branch
        repos.append(Repo(repo_id, branches))
    with serve(repos, lifetime=1500) as (url, _):
        yield url


@pytest.fixture(scope="module")
def study(hub, tmp_path_factory):
    work = tmp_path_factory.mktemp("absent_study")
    result = _snakemake(work, _config(work), hub, "--omit-from", *PER_CHECKPOINT_FIGURES)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return work


def test_the_run_completes_and_the_members_jobs_pass_the_absence_on(study):
    rec = absence.read_marker(study / "resources/checkpoints/tiny-seed9/step2")
    assert (rec["model"], rec["model_id"], rec["revision"]) == ("tiny-seed9", "org/tiny-seed9", "step2")
    for path in ("results/probes/tiny-seed9/step2", "results/pruning/tiny-seed9/step2",
                 "results/covariates/tiny-seed9/step2.parquet"):
        files = [p for p in (study / path).rglob("*") if p.is_file()] if (study / path).is_dir() else [study / path]
        assert files and all(absence.read_marker(f) == rec for f in files), path
    log = (study / "logs/tiny-seed9/step2/probe_checkpoint.log").read_text()
    assert "org/tiny-seed9@step2 does not exist on the hub" in log


def test_the_tables_leave_the_absent_member_out_and_list_it(study):
    agg = pd.read_parquet(study / "results/swapkl.parquet")
    summary = agg[agg["kind"] == "summary"]
    assert set(zip(summary["model"], summary["revision"])) == {
        ("tiny", "step1"), ("tiny", "step2"), ("tiny-seed2", "step1"), ("tiny-seed2", "step2"),
        ("tiny-seed9", "step1")}
    for table in ("swapkl.parquet", "pruning.parquet", "covariates.parquet", "seeds.parquet"):
        absent = provenance.read(str(study / "results" / table))["absent"]
        assert [(r["model"], r["revision"]) for r in absent] == [("tiny-seed9", "step2")], table
    assert set(pd.read_parquet(study / "results/pruning.parquet")["model"]) == {"tiny", "tiny-seed2"}
    seeds = pd.read_parquet(study / "results/seeds.parquet")
    fam = seeds[seeds["kind"] == "family"].set_index("revision")
    assert list(fam.loc["step1", "seeds"]) == [1, 2, 9] and list(fam.loc["step1", "absent_seeds"]) == []
    assert list(fam.loc["step2", "seeds"]) == [1, 2] and list(fam.loc["step2", "absent_seeds"]) == [9]
    s = summary[summary["revision"] == "step2"]
    assert fam.loc["step2", "gap_seed_mean"] == pytest.approx(s["gap_mean"].mean(), rel=1e-12)
    assert (study / "results/figures/seeds/tiny.png").stat().st_size > 1000


def test_a_missing_branch_outside_a_seed_family_fails_in_one_line(hub, tmp_path):
    config = _config(tmp_path)
    model = config["models"]["tiny"]
    del model["seeds"]
    model["revisions"] = ["step1", "step3"]
    model["prune"]["revisions"] = ["step1"]
    result = _snakemake(tmp_path, config, hub, "resources/checkpoints/tiny/step3")
    assert result.returncode != 0
    log = (tmp_path / "logs/tiny/step3/download_checkpoint.log").read_text().strip().splitlines()
    assert log[-1] == ("swapkl: error: download of org/tiny@step3 failed: the hub has no branch, tag or commit "
                       "'step3' in org/tiny; correct or remove that revision in the model's `revisions`")
    assert not (tmp_path / "resources/checkpoints/tiny/step3").exists()
