"""The published study's prompt lists, taken from its public code at one pinned commit.

The paper (Garcia 2026, code at github.com/Gpgabriel25/ProtocolGapDiagnostic) did not publish its probe
prompts as data files: they are Python list literals inside its scripts. :func:`fetch_paper_inputs` gets
those scripts at :data:`PAPER_COMMIT`, either from raw GitHub URLs or from a local clone (for machines
without network), checks each file's sha256 against the value pinned in :data:`SOURCES`, extracts each
list with :mod:`ast` (``ast.literal_eval`` of the assignment's value: nothing is executed) and writes it
as JSON Lines, one JSON string per line (``text_format: jsonl``; a prompt may contain newlines).

An output that already exists is replaced only when it already holds exactly what would be written.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from swapkl.tables.atomic import write_text_atomic
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_regular_file

PAPER_REPO = "Gpgabriel25/ProtocolGapDiagnostic"
PAPER_COMMIT = "d9636bb391b2fd2687f46c8bf13652970131dd68"
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"

#: source file -> sha256 of its bytes at PAPER_COMMIT
SOURCES = {
    "tpu_llama_bisimulation.py": "91bf525a37c3791b5fa07466b775cf3db5a3db31fc7e23f65827425c5db47bba",
    "tpu_pythia_protocol_gap_trajectory.py": "be14eb58f35425691a679c9c968e0478a549a6fda603d114dbe323fd6dd00a8c",
    "bisimulation_experiment.py": "34d04e0c950d2cc9359987ae686b89f87f96df57fd61cb635cc4af6d45863d15",
    "head_bisimulation.py": "d5f7003fd85acfaca8a31ccb852678d18cbdc110138b67a81cec4cc079f5eb83",
}


@dataclass(frozen=True)
class PromptList:
    """One prompt list: module-level ``variable`` of ``source`` holds ``length`` strings; the first ``take``
    are written. With ``suffixes`` = (function, variable), the list that function of ``source`` assigns to
    that local variable: the written prompts are the script's cycle, ``variable[k % length] +
    suffixes[(k // length) % len(suffixes)]`` for k = 0, 1, ... (every prompt once with the first suffix, then
    every prompt with the second, ...), and the first ``take`` of them are written."""

    name: str
    source: str
    variable: str
    length: int
    take: int
    suffixes: tuple[str, str] | None = None


#: the lists the published numbers used: Llama-3.1-8B distances (all 100 prompts of the pool), the Pythia
#: trajectory (the script's default: the first 32 of its 40 prompts), GPT-2-Medium's merge test (the first 50
#: of the 32 seed prompts cycled with the script's suffixes: all 32 as they are, then the first 18 with
#: " Furthermore,"), its pair distances (the same cycle's first 200, the script's N_PROMPTS: the distances of
#: its sorted_pairs.csv, which LaCo ordered its pairs by) and its head-level swaps (the 20 templates of the
#: head script)
PROMPT_LISTS = (
    PromptList("llama_prompts_100", "tpu_llama_bisimulation.py", "_PROMPT_POOL", 100, 100),
    PromptList("pythia_prompts_32", "tpu_pythia_protocol_gap_trajectory.py", "PROMPTS_100", 40, 32),
    PromptList("gpt2_merge_prompts_50", "bisimulation_experiment.py", "PROMPT_SEEDS", 32, 50,
               suffixes=("build_diverse_prompts", "suffixes")),
    PromptList("gpt2_pair_prompts_200", "bisimulation_experiment.py", "PROMPT_SEEDS", 32, 200,
               suffixes=("build_diverse_prompts", "suffixes")),
    PromptList("gpt2_head_prompts_20", "head_bisimulation.py", "PROMPT_TEMPLATES", 20, 20),
)


def prompt_list(name: str) -> PromptList:
    for p in PROMPT_LISTS:
        if p.name == name:
            return p
    raise SwapKLError(f"unknown paper prompt list {name!r}: choose from {', '.join(p.name for p in PROMPT_LISTS)}")


def _download(path: str, timeout: float) -> bytes:
    url = RAW_URL.format(repo=PAPER_REPO, commit=PAPER_COMMIT, path=path)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (a fixed https URL)
            return r.read()
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise SwapKLError(
            f"cannot download {path} of the paper's code from raw.githubusercontent.com ({reason}): allow access "
            f"to github, or clone github.com/{PAPER_REPO} at commit {PAPER_COMMIT[:12]} and name the clone with "
            "`paper: {repo: PATH}` in the config (swapkl fetch-paper-inputs --repo PATH)") from None


def read_source(path: str, repo: str | None = None, *, timeout: float = 60.0, pins: dict | None = None) -> str:
    """The text of the paper's file ``path`` at :data:`PAPER_COMMIT`: from the clone ``repo`` or downloaded,
    and in either case checked against its sha256 in ``pins`` (default :data:`SOURCES`)."""
    pins = SOURCES if pins is None else pins
    if path not in pins:
        raise SwapKLError(f"{path} is not one of the paper's pinned files ({', '.join(pins)})")
    if repo is not None:
        local = os.path.join(repo, path)
        require_regular_file(local, "paper source file")
        data = Path(local).read_bytes()
        where = local
    else:
        data = _download(path, timeout)
        where = f"github.com/{PAPER_REPO}@{PAPER_COMMIT[:12]}:{path}"
    got = hashlib.sha256(data).hexdigest()
    if got != pins[path]:
        raise SwapKLError(f"{where} has sha256 {got[:16]}..., not the pinned {pins[path][:16]}... of commit "
                          f"{PAPER_COMMIT[:12]}; check out that commit")
    return data.decode("utf-8")


def extract_list(source: str, variable: str, where: str = "source", function: str | None = None) -> list[str]:
    """The value of the module-level assignment ``variable = [...]`` in ``source`` (with ``function``: of the
    assignment in that module-level function's body), by ``ast.literal_eval`` (never executed); it must be a
    list of strings and assigned exactly once."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise SwapKLError(f"{where} is not valid Python ({e.msg}, line {e.lineno})") from None
    body, scope = tree.body, "at module level"
    if function is not None:
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
        if len(defs) != 1:
            raise SwapKLError(f"{where} defines {function}() {len(defs)} times; expected once")
        body, scope = defs[0].body, f"in {function}()"
    found = [node.value for node in body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)]
    if len(found) != 1:
        raise SwapKLError(f"{where} assigns {variable} {scope} {len(found)} times; expected once")
    try:
        value = ast.literal_eval(found[0])
    except ValueError:
        raise SwapKLError(f"{where}: {variable} is not a literal list") from None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SwapKLError(f"{where}: {variable} is not a list of strings")
    return value


def jsonl_text(items: list[str]) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)


def output_paths(out_dir: str, names=None) -> dict[str, str]:
    """``{name: out_dir/name.jsonl}`` for ``names`` (default: every list of :data:`PROMPT_LISTS`)."""
    names = [p.name for p in PROMPT_LISTS] if names is None else list(names)
    return {name: os.path.join(out_dir, f"{prompt_list(name).name}.jsonl") for name in names}


def fetch_paper_inputs(outputs: dict[str, str], repo: str | None = None, *, timeout: float = 60.0,
                       pins: dict | None = None) -> None:
    """Write each prompt list named in ``outputs`` (name -> JSONL path; names of :data:`PROMPT_LISTS`).

    Every list is read, checked (against ``pins``, default :data:`SOURCES`) and extracted before anything is
    written."""
    if not outputs:
        raise SwapKLError("name at least one prompt list to write")
    lists = {name: prompt_list(name) for name in outputs}
    texts: dict[str, str] = {}
    for p in lists.values():
        if p.source not in texts:
            texts[p.source] = read_source(p.source, repo, timeout=timeout, pins=pins)
    written = {}
    for name, p in lists.items():
        items = extract_list(texts[p.source], p.variable, p.source)
        if len(items) != p.length:
            raise SwapKLError(f"{p.source}: {p.variable} holds {len(items)} prompts, expected {p.length}")
        if p.suffixes is not None:
            ends = extract_list(texts[p.source], p.suffixes[1], p.source, function=p.suffixes[0])
            items = [items[k % p.length] + ends[(k // p.length) % len(ends)] for k in range(p.take)]
        written[name] = jsonl_text(items[: p.take])
    for name, path in outputs.items():
        if os.path.lexists(path):
            same = (os.path.isfile(path) and not os.path.islink(path)
                    and Path(path).read_bytes() == written[name].encode("utf-8"))
            if not same:
                raise SwapKLError(f"refusing to overwrite {path!r}: it exists and does not hold the paper's "
                                  f"{name}; move it away")
            continue
        write_text_atomic(Path(path), written[name])
