"""A real single-node SLURM cluster for tests, and the Snakemake profile to use it.

The shell scripts next to this module do the work (they can be run by hand
too): ``install.sh`` apt-installs munge + SLURM if missing, ``start_cluster.sh
STATE_DIR`` starts munged, slurmctld and slurmd as root with a generated
``STATE_DIR/etc/slurm.conf`` (linked from /run/slurm/conf while it runs),
``stop_cluster.sh STATE_DIR`` cancels the jobs and ends exactly those daemons.

Use from a test (see tests/test_slurm.py for the pytest fixture)::

    ok, why = install_slurm()
    if not ok:
        pytest.skip(why)
    with local_slurm_cluster(tmp_dir / "slurm") as cluster:
        profile = write_local_profile(tmp_dir / "profile", cluster, gpu_rules=["train"])
        subprocess.run(snakemake_slurm_command(profile, "--directory", workdir, ...),
                       env=cluster.env(), cwd=workdir, check=True)

Jobs run as root on this node with the submitting process's environment
(the SLURM executor submits with ``sbatch --export=ALL``), so ``cluster.env()``
puts this interpreter's bin directory (the venv) first on PATH and sets
SLURM_CONF (clients inside jobs, whose SLURM_CONF the Snakemake jobstep
executor removes, find the config through the /run/slurm/conf link).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

SCRIPTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCRIPTS_DIR.parents[1]
SLURM_PROFILE_DIR = REPO_ROOT / "profiles" / "slurm"

# start_cluster.sh waits up to this long for the node to become idle.
START_TIMEOUT_S = 30


class SlurmClusterError(RuntimeError):
    """The local cluster could not be started (logs are in the message)."""


@dataclass(frozen=True)
class LocalSlurmCluster:
    """A running local cluster: where it lives and how to talk to it."""

    state_dir: Path
    partition: str
    node: str
    cpus: int
    memory_mb: int

    @property
    def slurm_conf(self) -> Path:
        return self.state_dir / "etc" / "slurm.conf"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for SLURM clients and for Snakemake runs on this cluster."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.slurm_conf)
        venv_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", "/usr/bin:/bin")])
        # Never let a surrounding allocation leak into submissions.
        for key in [k for k in env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del env[key]
        return env

    def run(self, *args: str, timeout: float = 30) -> str:
        """Run a SLURM client command (squeue, sinfo, scontrol, ...); return stdout."""
        proc = subprocess.run(
            list(args),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise SlurmClusterError(
                f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}"
            )
        return proc.stdout

    def job_states(self) -> dict[str, tuple[str, str]]:
        """All jobs slurmctld still knows (MinJobAge is 1 h): id -> (state, job name)."""
        out = self.run("squeue", "--states=all", "--noheader", "--format=%i|%T|%j")
        states = {}
        for line in out.splitlines():
            job_id, state, name = line.split("|", 2)
            states[job_id] = (state, name)
        return states


def install_slurm(timeout: float = 900) -> tuple[bool, str]:
    """Run install.sh; return (ok, reason). Not ok means SLURM is unavailable here."""
    if os.geteuid() != 0:
        return False, "the local SLURM cluster needs root (slurmd runs jobs as their user)"
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        return False, "SLURM is not installed and apt-get is not available"
    try:
        proc = subprocess.run(
            ["bash", str(SCRIPTS_DIR / "install.sh")],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"tests/slurm/install.sh did not finish in {timeout:.0f} s"
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        return False, f"tests/slurm/install.sh failed (exit {proc.returncode}): {tail}"
    return True, ""


def _free_ports(count: int) -> list[int]:
    """count distinct TCP ports that are free on 127.0.0.1 right now."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _stop(state_dir: Path) -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPTS_DIR / "stop_cluster.sh"), str(state_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise SlurmClusterError(
            f"stop_cluster.sh {state_dir} failed: {proc.stdout}{proc.stderr}"
        )


@contextmanager
def local_slurm_cluster(
    state_dir: Path, partition: str = "debug"
) -> Iterator[LocalSlurmCluster]:
    """Start the cluster in state_dir, yield it (node idle), always stop it on exit.

    Ports are picked free at start so that a stray cluster (or a real SLURM on
    this machine) does not collide with this one. Needs root and the packages
    from install.sh. Raises SlurmClusterError when the cluster does not come up.
    """
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    ctld_port, slurmd_port = _free_ports(2)
    env = dict(os.environ)
    env.update(
        SWAPKL_SLURM_PARTITION=partition,
        SWAPKL_SLURM_CTLD_PORT=str(ctld_port),
        SWAPKL_SLURM_SLURMD_PORT=str(slurmd_port),
        SWAPKL_SLURM_START_TIMEOUT=str(START_TIMEOUT_S),
    )
    try:
        proc = subprocess.run(
            ["bash", str(SCRIPTS_DIR / "start_cluster.sh"), str(state_dir)],
            env=env,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S + 60,
            check=False,
        )
        if proc.returncode != 0:
            raise SlurmClusterError(
                f"start_cluster.sh {state_dir} failed (exit {proc.returncode}):\n"
                f"{proc.stdout}{proc.stderr}"
            )
        node = socket.gethostname().split(".")[0]  # as `hostname -s` in the script
        probe = LocalSlurmCluster(state_dir, partition, node, cpus=0, memory_mb=0)
        cpus, memory_mb = probe.run(
            "sinfo", "--noheader", "--Node", f"--nodes={node}", "--format=%c %m"
        ).split()
        yield LocalSlurmCluster(
            state_dir=state_dir,
            partition=partition,
            node=node,
            cpus=int(cpus),
            memory_mb=int(memory_mb),
        )
    finally:
        _stop(state_dir)


def local_profile_settings(
    cluster: LocalSlurmCluster,
    gpu_rules: Sequence[str] = (),
    base_profile: Path = SLURM_PROFILE_DIR / "config.yaml",
) -> dict:
    """profiles/slurm/config.yaml with the few changes needed to run on this cluster.

    * default-resources: slurm_partition -> the local partition, slurm_account
      dropped (no accounting database, so no accounts), mem_mb capped at the
      node's memory; everything else as in the base profile;
    * set-resources: gpu=0 for each rule in gpu_rules (the node has no GPU
      GRES, and SLURM rejects ``--gpus=1`` at submission);
    * max-threads: the node's CPUs (a rule's threads become --cpus-per-task,
      and SLURM rejects more CPUs than the node has);
    * job status from squeue (sacct needs the accounting database), polled
      sooner than on a shared cluster;
    * SLURM logs of successful jobs kept, so that tests can read the job ids.
    """
    settings = yaml.safe_load(base_profile.read_text())
    default_resources = dict(settings.get("default-resources") or {})
    default_resources["slurm_partition"] = cluster.partition
    default_resources.pop("slurm_account", None)
    if int(default_resources.get("mem_mb", 0)) > cluster.memory_mb:
        default_resources["mem_mb"] = cluster.memory_mb
    settings["default-resources"] = default_resources
    set_resources = {
        rule: dict(values) for rule, values in (settings.get("set-resources") or {}).items()
    }
    for rule in gpu_rules:
        set_resources.setdefault(rule, {})["gpu"] = 0
    if set_resources:
        settings["set-resources"] = set_resources
    settings.update(
        {
            "max-threads": cluster.cpus,
            "slurm-status-command": "squeue",
            "slurm-init-seconds-before-status-checks": 1,
            "seconds-between-status-checks": 1,
            "slurm-keep-successful-logs": True,
            "latency-wait": 5,
        }
    )
    return settings


def write_local_profile(
    profile_dir: Path, cluster: LocalSlurmCluster, gpu_rules: Sequence[str] = ()
) -> Path:
    """Write local_profile_settings() as profile_dir/config.yaml; return profile_dir."""
    profile_dir = Path(profile_dir)
    profile_dir.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(local_profile_settings(cluster, gpu_rules), sort_keys=False)
    (profile_dir / "config.yaml").write_text(text)
    return profile_dir


def snakemake_slurm_command(profile_dir: Path, *args: str) -> list[str]:
    """``python -m snakemake --workflow-profile profile_dir *args``.

    The SLURM profile is a workflow profile (it replaces profiles/default, whose
    local settings such as the gpu=1 cap must not apply on a cluster).
    """
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--workflow-profile",
        str(profile_dir),
        *args,
    ]
