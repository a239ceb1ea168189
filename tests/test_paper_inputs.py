"""swapkl.paper.prompt_lists and `swapkl fetch-paper-inputs`: the paper's prompt lists from its code.

The core tests need neither network nor the paper's repository: they write a local clone whose two scripts
hold list literals (plus code that would leave a trace if anything executed it) and pin those files'
sha256. One more test runs on the real files at the pinned commit, read from the bare mirror of the
paper's repository with `git show`, where this machine has that mirror.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import urllib.error
from pathlib import Path

import pytest

from swapkl.cli import main
from swapkl.errors import SwapKLError
from swapkl.paper.prompt_lists import PAPER_COMMIT, SOURCES, extract_list, fetch_paper_inputs, output_paths

MIRROR = Path("/work/.mirror/Gpgabriel25+ProtocolGapDiagnostic/repo")
LLAMA = [f"prompt {k}" for k in range(99)] + ["def f(n):\n    return n"]
PYTHIA = [f"Pythia prompt number {k}" for k in range(40)]
SEEDS = [f"seed {k}." for k in range(32)]
ENDS = ["", " Furthermore,", " However,"]
HEADS = [f"head prompt {k}" for k in range(20)]


def _script(var: str, items: list[str], trace: Path) -> str:
    """A script that assigns ``var`` and would write ``trace`` if it were executed or imported."""
    return (f"import pathlib\npathlib.Path({str(trace)!r}).write_text('executed')\n"
            f"OTHER = [1, 2]\n{var} = {items!r}\n\ndef main():\n    raise SystemExit(1)\n")


@pytest.fixture
def clone(tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    trace = tmp_path / "trace"
    (repo / "tpu_llama_bisimulation.py").write_text(_script("_PROMPT_POOL", LLAMA, trace))
    (repo / "tpu_pythia_protocol_gap_trajectory.py").write_text(_script("PROMPTS_100", PYTHIA, trace))
    (repo / "bisimulation_experiment.py").write_text(
        _script("PROMPT_SEEDS", SEEDS, trace) + f"\ndef build_diverse_prompts(n):\n    suffixes = {ENDS!r}\n"
        "    return []\n\nsuffixes = ['a module-level decoy']\n")
    (repo / "head_bisimulation.py").write_text(_script("PROMPT_TEMPLATES", HEADS, trace))
    pins = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in repo.iterdir()}
    return repo, pins, trace


def _read_jsonl(path) -> list[str]:
    return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]


def test_lists_come_from_the_clone_unexecuted_first_n_in_order(clone, tmp_path):
    repo, pins, trace = clone
    outs = output_paths(str(tmp_path / "out"))
    fetch_paper_inputs(outs, str(repo), pins=pins)
    assert _read_jsonl(outs["llama_prompts_100"]) == LLAMA  # all 100, the multi-line prompt intact
    assert _read_jsonl(outs["pythia_prompts_32"]) == PYTHIA[:32]  # the first 32 of 40, in order
    # the merge test's 50: every seed as it is, then the first 18 with the second suffix (the function's list)
    assert _read_jsonl(outs["gpt2_merge_prompts_50"]) == SEEDS + [s + " Furthermore," for s in SEEDS[:18]]
    # the pair distances' 200: the same cycle, the suffixes in turn (here 3 of them, so the cycle wraps)
    assert _read_jsonl(outs["gpt2_pair_prompts_200"]) == [SEEDS[k % 32] + ENDS[(k // 32) % 3] for k in range(200)]
    assert _read_jsonl(outs["gpt2_head_prompts_20"]) == HEADS
    assert not trace.exists()  # nothing was executed
    fetch_paper_inputs(outs, str(repo), pins=pins)  # an output that already holds the lists is fine
    Path(outs["pythia_prompts_32"]).write_text('"someone else\'s file"\n')
    with pytest.raises(SwapKLError, match="refusing to overwrite"):
        fetch_paper_inputs(outs, str(repo), pins=pins)
    assert _read_jsonl(outs["pythia_prompts_32"]) == ["someone else's file"]


def test_a_changed_file_or_list_is_refused_before_anything_is_written(clone, tmp_path):
    repo, pins, _ = clone
    outs = output_paths(str(tmp_path / "out"))
    path = repo / "tpu_pythia_protocol_gap_trajectory.py"
    path.write_text(path.read_text().replace("number 3", "number three"))
    with pytest.raises(SwapKLError, match="tpu_pythia_protocol_gap_trajectory.py has sha256 .* not the pinned"):
        fetch_paper_inputs(outs, str(repo), pins=pins)
    pins[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text(_script("PROMPTS_100", PYTHIA[:39], repo / "t"))
    pins[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SwapKLError, match="PROMPTS_100 holds 39 prompts, expected 40"):
        fetch_paper_inputs(outs, str(repo), pins=pins)
    assert not (tmp_path / "out").exists()
    with pytest.raises(SwapKLError, match="assigns X at module level 0 times"):
        extract_list("Y = ['a']\n", "X")
    with pytest.raises(SwapKLError, match="not a literal list"):
        extract_list("X = [open('f')]\n", "X")


def test_offline_without_a_clone_fails_in_one_line_naming_both_ways_out(tmp_path, monkeypatch, capsys):
    def no_network(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    rc = main(["fetch-paper-inputs", "--out-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "cannot download" in err[0] and "allow access to github" in err[0]
    assert "paper: {repo: PATH}" in err[0] and "--repo PATH" in err[0] and PAPER_COMMIT[:12] in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mirror", [MIRROR] if MIRROR.is_dir() else [], ids=["mirror"])
def test_the_real_files_at_the_pinned_commit(mirror, tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    for name in SOURCES:
        blob = subprocess.run(["git", "-C", str(mirror), "show", f"{PAPER_COMMIT}:{name}"], capture_output=True,
                              check=True).stdout
        (repo / name).write_bytes(blob)
    outs = output_paths(str(tmp_path / "out"))
    fetch_paper_inputs(outs, str(repo))
    llama, pythia = _read_jsonl(outs["llama_prompts_100"]), _read_jsonl(outs["pythia_prompts_32"])
    assert len(llama) == len(set(llama)) == 100 and sum("\n" in p for p in llama) == 1
    assert len(pythia) == 32 and pythia[0].startswith("The quick brown fox jumps over the lazy dog")
    assert pythia[-1].startswith("The philosopher Immanuel Kant")  # the 33rd, "Graphene ...", is not taken
    merge, heads = _read_jsonl(outs["gpt2_merge_prompts_50"]), _read_jsonl(outs["gpt2_head_prompts_20"])
    assert len(merge) == 50 and merge[0].startswith("The French Revolution was a period of radical political")
    assert merge[32] == merge[0] + " Furthermore," and merge[49] == merge[17] + " Furthermore,"
    assert len(heads) == 20 and heads[1].startswith("def fibonacci(n):\n")
    pairs = _read_jsonl(outs["gpt2_pair_prompts_200"])
    assert len(pairs) == 200 and pairs[:50] == merge  # the merge test's 50 are the distances' first 50
    assert pairs[64] == pairs[0] + " In addition," and pairs[199] == pairs[7] + " Consequently,"  # suffixes 2 and 6
