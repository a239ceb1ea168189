"""Run Snakemake through profiles/slurm on a real local SLURM cluster.

The session fixture `slurm_cluster` installs SLURM if needed (skips only when
it cannot: not root, or apt fails), starts a single-node cluster from
tests/slurm/start_cluster.sh, and always stops it (tests/slurm/stop_cluster.sh)
at the end of the session. Run just these with:

    .venv/bin/pytest -m slurm tests/test_slurm.py
"""

from __future__ import annotations

import re
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import yaml

try:
    from slurm.cluster import (
        SLURM_PROFILE_DIR,
        LocalSlurmCluster,
        install_slurm,
        local_slurm_cluster,
        snakemake_slurm_command,
        write_local_profile,
    )
except ModuleNotFoundError:  # tests/ imported as a package
    from tests.slurm.cluster import (
        SLURM_PROFILE_DIR,
        LocalSlurmCluster,
        install_slurm,
        local_slurm_cluster,
        snakemake_slurm_command,
        write_local_profile,
    )

SNAKEMAKE_TIMEOUT_S = 600


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> LocalSlurmCluster:
    ok, why = install_slurm()
    if not ok:
        pytest.skip(f"no local SLURM: {why}")
    with local_slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def run_snakemake(cluster: LocalSlurmCluster, workdir: Path, profile: Path, *args: str):
    """Run snakemake in workdir with the given workflow profile; return (rc, log text)."""
    log_path = workdir / "snakemake.log"
    with open(log_path, "w") as log:
        proc = subprocess.run(
            snakemake_slurm_command(profile, "--directory", str(workdir), *args),
            cwd=workdir,
            env=cluster.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=SNAKEMAKE_TIMEOUT_S,
            check=False,
        )
    return proc.returncode, log_path.read_text()


TWO_RULES = """
localrules: all

rule all:
    input: "results/summary.txt"

rule prepare:
    output: "results/prepared.txt"
    threads: 1
    resources: mem_mb=500, runtime=5
    shell: "echo prepare_job=$SLURM_JOB_ID > {output}"

rule train_gpu:
    input: "results/prepared.txt"
    output: "results/summary.txt"
    threads: 4
    resources: gpu=1, mem_mb=500, runtime=5
    shell:
        "cat {input} > {output} && "
        "echo train_gpu_job=$SLURM_JOB_ID >> {output} && "
        "echo train_gpu_gpus=${{SLURM_GPUS_ON_NODE:-none}} >> {output}"
"""

ONE_GPU_RULE = """
rule train_gpu:
    output: "results/summary.txt"
    resources: gpu=1, mem_mb=500, runtime=5
    shell: "echo never > {output}"
"""


def test_slurm_profile_is_valid_and_has_placeholders(tmp_path):
    """Snakemake accepts every key of profiles/slurm (a dry run needs no cluster)."""
    profile = yaml.safe_load((SLURM_PROFILE_DIR / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert profile["default-resources"]["slurm_partition"] == "CHANGE_ME_partition"
    assert profile["default-resources"]["slurm_account"] == "CHANGE_ME_account"

    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(TWO_RULES))
    proc = subprocess.run(
        snakemake_slurm_command(SLURM_PROFILE_DIR, "--directory", str(workdir), "--dry-run"),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rule train_gpu:" in proc.stdout


@pytest.mark.slurm
@pytest.mark.slow
def test_two_rule_workflow_runs_as_slurm_jobs(slurm_cluster, tmp_path):
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(TWO_RULES))
    profile = write_local_profile(tmp_path / "profile", slurm_cluster, gpu_rules=["train_gpu"])

    started = time.monotonic()
    rc, log = run_snakemake(slurm_cluster, workdir, profile, "--verbose")
    elapsed = time.monotonic() - started
    assert rc == 0, f"snakemake failed after {elapsed:.0f} s:\n{log[-6000:]}"

    # Each rule ran inside its own SLURM job: the job id is in its environment.
    summary = (workdir / "results" / "summary.txt").read_text().split()
    values = dict(item.split("=", 1) for item in summary)
    prepare_id, train_id = values["prepare_job"], values["train_gpu_job"]
    assert prepare_id.isdigit() and train_id.isdigit() and prepare_id != train_id
    assert values["train_gpu_gpus"] == "none"

    # Snakemake submitted exactly these two jobs, all named after this run's id.
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert sorted(submitted) == sorted([prepare_id, train_id])
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    states = slurm_cluster.job_states()
    for job_id in (prepare_id, train_id):
        assert states[job_id] == ("COMPLETED", run_id)

    # Their SLURM logs are where the plugin puts them (kept by the test profile).
    logs = workdir / ".snakemake" / "slurm_logs"
    assert (logs / "rule_prepare" / f"{prepare_id}.log").is_file()
    assert (logs / "rule_train_gpu" / f"{train_id}.log").is_file()

    # gpu=1 was overridden to 0 for this GPU-less node: no --gpus, no GRES.
    sbatch_train = [
        line for line in log.splitlines() if "sbatch call:" in line and "rule_train_gpu" in line
    ]
    assert len(sbatch_train) == 1 and "--gpus" not in sbatch_train[0]
    job = slurm_cluster.run("scontrol", "show", "job", train_id)
    assert "gres/gpu" not in job and "TresPer" not in job, job
    assert f"Partition={slurm_cluster.partition}" in job
    # threads: 4 capped at the node's CPUs (max-threads in the test profile).
    assert f"NumCPUs={min(4, slurm_cluster.cpus)} " in job


@pytest.mark.slurm
@pytest.mark.slow
def test_gpu_resource_becomes_gpus_request(slurm_cluster, tmp_path):
    """Without the override, gpu=1 is submitted as --gpus=1, which this node refuses."""
    workdir = tmp_path / "wf"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(textwrap.dedent(ONE_GPU_RULE))
    profile = write_local_profile(tmp_path / "profile", slurm_cluster, gpu_rules=[])

    rc, log = run_snakemake(slurm_cluster, workdir, profile)

    assert rc != 0, log[-4000:]
    assert "--gpus=1" in log
    assert "Invalid generic resource (gres) specification" in log
    assert not (workdir / "results" / "summary.txt").exists()


GPU_RULES = ["probe_checkpoint", "probe_checkpoint_without_deletion", "probe_checkpoint_with_covariates",
             "probe_checkpoint_without_deletion_with_covariates", "probe", "prune_layers"]
REPO = Path(__file__).resolve().parents[1]
MICRO_CONFIG = REPO / "tests" / "slurm" / "demo_micro.yaml"


@pytest.mark.slurm
@pytest.mark.slow
def test_demo_dag_through_slurm_equals_local_run(slurm_cluster, tmp_path):
    """The real demo DAG (training included) submitted through profiles/slurm gives the local run's numbers."""
    import sys

    import pandas as pd

    common = ["--snakefile", str(REPO / "Snakefile"), "--replace-workflow-config", "--configfile", str(MICRO_CONFIG)]
    # The local run makes only the table it is compared on, and runs while the SLURM run waits on its scheduler.
    local = tmp_path / "local"
    local.mkdir()
    with open(tmp_path / "local.log", "w") as local_log:
        local_run = subprocess.Popen([sys.executable, "-m", "snakemake", *common, "--directory", str(local),
                                      "--cores", "2", "results/swapkl.parquet"],
                                     cwd=REPO, stdout=local_log, stderr=subprocess.STDOUT)
    try:
        remote = tmp_path / "slurm"
        remote.mkdir()
        profile = write_local_profile(tmp_path / "profile", slurm_cluster, gpu_rules=GPU_RULES)
        rc, log = run_snakemake(slurm_cluster, remote, profile, *common)
        local_run.wait(timeout=SNAKEMAKE_TIMEOUT_S)
    finally:
        if local_run.poll() is None:
            local_run.kill()
            local_run.wait()
    assert local_run.returncode == 0, (tmp_path / "local.log").read_text()[-6000:]
    assert rc == 0, log[-6000:]
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(submitted) >= 8  # corpus, tokenizer, training, 6 probes, aggregate, figures
    states = slurm_cluster.job_states()
    assert all(states[j][0] == "COMPLETED" for j in submitted)

    for rel in ("results/swapkl.parquet", "results/figures/gap_trajectory/pythia-demo.png"):
        assert (remote / rel).is_file() and (remote / rel).stat().st_size > 0, rel
    a = pd.read_parquet(local / "results/swapkl.parquet")
    b = pd.read_parquet(remote / "results/swapkl.parquet")
    key = ["kind", "model", "revision", "protocol", "layer_i", "layer_j", "pair_set", "metric", "width"]
    key = [k for k in key if k in a.columns]
    a = a.sort_values(key, na_position="first").reset_index(drop=True)
    b = b.sort_values(key, na_position="first").reset_index(drop=True)
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-6, atol=1e-9)
