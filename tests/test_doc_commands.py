"""Every shell command in the README's and docs/'s ```bash blocks still works.

Each command is checked the cheapest way that proves it runs (or is explicitly marked why it cannot be):

* ``swapkl ...``: parsed by the real command-line parser (an unknown option or a missing required one fails);
  ``swapkl ... --help`` is run;
* ``make TARGET``: ``make -n TARGET`` (the target exists and its recipe expands);
* ``snakemake ...``: the same arguments as a dry run on this checkout (slow: a few seconds each);
* ``pytest ...``: collected (``--collect-only``; slow), so its markers and paths exist;
* a command that cannot run here says why with a marker comment at the end of its line, e.g.
  ``hf auth login   # needs the hub``. Markers: see :data:`MARKERS`.

Anything else fails: a new kind of command needs a rule here or a marker in the docs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from swapkl.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: marker comments that exempt a command from running here, and why
MARKERS = {
    "needs the hub": "downloads from the model or dataset hub",
    "needs SLURM": "submits to a SLURM cluster",
    "after a run": "reads the results of a finished run",
    "needs a GPU": "needs a CUDA device",
}
FENCE = re.compile(r"^```(\w*)\s*\n(.*?)^```", re.M | re.S)


def doc_commands() -> list[tuple[str, int, str, str | None]]:
    """(file, line, command, marker) of every command in a bash/sh/shell block: continuation lines joined,
    comments and blank lines dropped."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for block in FENCE.finditer(text):
            if block.group(1) not in ("bash", "sh", "shell"):
                continue
            first = text[:block.start(2)].count("\n") + 1
            pending, start = "", None
            for k, line in enumerate(block.group(2).splitlines()):
                if start is None:
                    start = first + k
                body, _, comment = line.partition(" #") if not line.lstrip().startswith("#") else ("", "", line)
                if body.rstrip().endswith("\\"):
                    pending += body.rstrip()[:-1] + " "
                    continue
                command = (pending + body).strip()
                pending = ""
                if command:
                    marker = next((m for m in MARKERS if m in comment), None)
                    found.append((path.relative_to(REPO).as_posix(), start, command, marker))
                start = None
    return found


COMMANDS = doc_commands()
SLOW = ("snakemake", "pytest")


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    tool = argv[0].removeprefix(".venv/bin/")
    if tool == "python" and argv[1:3] == ["-m", "swapkl"]:
        return ["swapkl", *argv[3:]]
    return [tool, *argv[1:]]


def _params():
    for path, line, command, marker in COMMANDS:
        slow = _argv(command)[0] in SLOW and marker is None
        yield pytest.param(command, marker, id=f"{path}:{line}", marks=[pytest.mark.slow] if slow else [])


def test_commands_were_found():
    files = {p for p, *_ in COMMANDS}
    assert "README.md" in files and len(COMMANDS) >= 10


@pytest.mark.parametrize("command, marker", list(_params()))
def test_documented_command_works(command, marker):
    argv = _argv(command)
    tool = argv[0]
    if tool == "swapkl":  # parsed even when marked: the options must exist
        if "--help" in argv or "-h" in argv:
            proc = subprocess.run([sys.executable, "-m", "swapkl", *argv[1:]], cwd=REPO, capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
        else:
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as e:
                pytest.fail(f"{command!r} does not parse (exit {e.code})")
        return
    if marker is not None:
        return
    if tool == "make":
        proc = subprocess.run(["make", "-n", *argv[1:]], cwd=REPO, capture_output=True, text=True, timeout=120)
    elif tool == "snakemake":
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", *argv[1:], "--dry-run"], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    elif tool == "pytest":
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *argv[1:]], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    else:
        pytest.fail(f"{command!r}: no rule to check this command; mark it with one of {sorted(MARKERS)}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_relative_links_point_to_files():
    """Every relative link of the README and docs/ names a file of this checkout."""
    broken = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if "://" in target:
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(REPO)} -> {target}")
    assert not broken, broken
