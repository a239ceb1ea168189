"""The Makefile's install stamps: a new TORCH reinstalls torch, an unchanged one does nothing.

Checked with ``make -n`` (nothing is installed) in an empty folder that holds only a ``pyproject.toml`` and the
``.venv`` files the recipes would have made.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = REPO / "Makefile"


def make_env() -> dict[str, str]:
    """The environment of a top-level make: under `make test` the outer make's MAKELEVEL and MAKEFLAGS would
    make the inner one print "Entering directory" lines around its recipe."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")}


def dry_run(folder: Path, *args: str) -> str:
    proc = subprocess.run(["make", "--no-print-directory", "-n", "-f", str(MAKEFILE), "setup", *args], cwd=folder,
                          capture_output=True, text=True, timeout=60, env=make_env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def install_as_printed(folder: Path, printed: str) -> None:
    """Create the files the printed recipe would have left: the virtualenv's python and both stamps, newer
    than pyproject.toml."""
    (folder / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (folder / ".venv" / "bin" / "python").touch()
    for old in (folder / ".venv").glob(".swapkl-torch-*"):
        old.unlink()
    stamp = re.search(r"> (\.venv/\.swapkl-torch-\S+)$", printed, re.M)
    assert stamp, printed
    later = os.stat(folder / "pyproject.toml").st_mtime + 10
    for name in (stamp.group(1), ".venv/.swapkl-installed"):
        (folder / name).touch()
        os.utime(folder / name, (later, later))


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


def test_fresh_setup_installs_the_default_torch_then_the_package(checkout):
    out = dry_run(checkout)
    lines = out.splitlines()
    assert lines[0].endswith("-m venv .venv")
    torch_at = next(k for k, line in enumerate(lines) if line.endswith('"torch==2.13.0"'))
    package_at = next(k for k, line in enumerate(lines) if "-e '.[dev,hub,real]'" in line)
    assert torch_at < package_at


def test_unchanged_torch_does_nothing(checkout):
    install_as_printed(checkout, dry_run(checkout))
    assert "pip" not in dry_run(checkout)


def test_new_torch_replaces_the_installed_one(checkout):
    """After a CPU setup, `make setup TORCH=torch` uninstalls that torch and installs the requested one (the
    issue: the single stamp said "Nothing to be done" and the GPU rules ran on the CPU build)."""
    install_as_printed(checkout, dry_run(checkout))
    out = dry_run(checkout, "TORCH=torch")
    assert "pip uninstall --quiet --yes torch" in out
    assert re.search(r'pip install .*"torch"$', out, re.M), out
    assert "-e '.[dev,hub,real]'" in out
    assert "-m venv" not in out  # the virtualenv stays
    install_as_printed(checkout, out)
    assert "pip" not in dry_run(checkout, "TORCH=torch")
    assert '"torch==2.13.0"' in dry_run(checkout)  # and back to the CPU pin


def test_empty_torch_keeps_the_installed_torch(checkout):
    install_as_printed(checkout, dry_run(checkout))
    out = dry_run(checkout, "TORCH=")
    assert "uninstall" not in out and '"torch' not in out
    assert "-e '.[dev,hub,real]'" in out


@pytest.mark.slow
def test_demo_ends_with_the_report_and_four_files_the_demo_writes(tmp_path):
    out = subprocess.run(["make", "--no-print-directory", "-n", "demo"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, env=make_env()).stdout
    assert "results/report.html" in out.splitlines()[-2]
    first = re.findall(r'"(results/\S+?): ', out.splitlines()[-1])
    assert len(first) == 4, out
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--dry-run", "--forceall", "--workflow-profile",
                          "profiles/demo", "--directory", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert dry.returncode == 0, dry.stderr[-2000:]
    for path in first:
        assert re.search(rf"(?<![\w/]){re.escape(path)}\b", dry.stdout), path
