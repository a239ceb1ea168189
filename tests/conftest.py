"""Test-wide settings: tiny models run fastest on one thread and avoid oversubscribing shared cores."""

import pytest
import torch

torch.set_num_threads(1)


def pytest_report_header(config):
    # which vectorised ATen kernels this run uses (tests/test_cpu_kernels.py checks it in its children)
    return f"torch CPU capability: {torch.backends.cpu.get_cpu_capability()}"


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: ``-n auto --dist loadgroup``) each test file runs whole on one worker, so
    its module fixtures are built once; the files that use ``demo_run`` share one worker, so the smoke demo runs
    once and no other worker reads its tree while a test moves a file of it aside."""
    shared = {item.path for item in items if "demo_run" in getattr(item, "fixturenames", ())}
    for item in items:
        group = "demo_run" if item.path in shared else item.path.name
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """A finished smoke-demo results tree with its report (results/, resources/, logs/, .snakemake/ and
    report.html in one folder), built once per session by the real workflow."""
    from workflow_runs import run_demo

    work = tmp_path_factory.mktemp("demo")
    proc = run_demo(work)
    assert proc.returncode == 0, proc.stderr[-6000:]
    rep = run_demo(work, extra=("--report", str(work / "report.html")))
    assert rep.returncode == 0, rep.stderr[-4000:]
    return work
