"""Test-wide settings: tiny models run fastest on one thread and avoid oversubscribing shared cores."""

import os
import shutil
from pathlib import Path

import pytest
import torch
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]

torch.set_num_threads(1)


def pytest_report_header(config):
    # which vectorised ATen kernels this run uses (tests/test_cpu_kernels.py checks it in its children)
    return f"torch CPU capability: {torch.backends.cpu.get_cpu_capability()}"


def _build_demo(work):
    from workflow_runs import run_demo

    proc = run_demo(work)
    assert proc.returncode == 0, proc.stderr[-6000:]
    # the profile names the report's stylesheet relative to the repository, and this run's --directory is elsewhere
    rep = run_demo(work, extra=("--report", str(work / "report.html"), "--report-stylesheet",
                                str(REPO / "workflow" / "report" / "report.css")))
    assert rep.returncode == 0, rep.stderr[-4000:]
    return work


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """A finished smoke-demo results tree with its report (results/, resources/, logs/, .snakemake/ and
    report.html in one folder), built once per test run by the real workflow and only read by the tests.

    Under pytest-xdist (`make test`) the first worker that needs it builds it in the run's folder, above the
    workers' own, while the others wait on a lock and then read the same tree."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_demo(tmp_path_factory.mktemp("demo"))
    shared = tmp_path_factory.getbasetemp().parent
    work = shared / "demo_run"
    with FileLock(str(shared / "demo_run.lock")):
        if not (work / "report.html").is_file():
            if work.exists():  # a build of this run that failed on another worker
                shutil.rmtree(work)
            work.mkdir()
            _build_demo(work)
    return work
