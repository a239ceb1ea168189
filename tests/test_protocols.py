"""The probe protocol registry (swapkl.probes.protocols): each protocol module against an independent statement of
its definition, the registry's metadata against the variants it builds, the config check that replaced the schema
enum, and a toy protocol added as one module and nothing else, seen by the CLI, the dry-run DAG and the report
targets."""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from direct_config import composed_schema_file
from repo_copy import repo_copy
from swapkl.config.checks import ConfigError, check_config
from swapkl.probes import protocols
from swapkl.probes.pairs import pairs_for
from swapkl.probes.protocols import build_variants, get_protocol, protocol_names, registered

REPO = Path(__file__).resolve().parents[1]
TOY = Path(__file__).with_name("toy_protocol.py")


# ------------------------------------------------------------------------------ each protocol, independently


def _slots(n_layers, changed):
    """What each executed slot runs, the base model's block except where ``changed`` says otherwise
    (``None``: the slot is skipped)."""
    out = [changed.get(k, ("block", k)) for k in range(n_layers)]
    return tuple(s for s in out if s is not None)


def _reference(name, n_layers, n_units, pairs):
    """{(layer_i, layer_j, head): slots} of a protocol, written from its definition (README, docs/paper_modes.md)
    without the package's builders. A slot is ("block", b), ("average", host, partner), ("head", host, donor,
    unit), ("sublayer", host, donor, part) or ("skip", host, part)."""
    out = {}
    for i, j in pairs:
        if name in ("replacement", "averaging"):
            for a, b in ((i, j), (j, i)):  # directed: both directions
                run = ("block", b) if name == "replacement" else ("average", a, b)
                out[(a, b, None)] = _slots(n_layers, {a: run})
        elif name == "interchange":
            out[(i, j, None)] = _slots(n_layers, {i: ("block", j), j: ("block", i)})
        elif name == "averaging_paper":
            out[(i, j, None)] = _slots(n_layers, {i: ("average", i, j), j: ("average", j, i)})
        part = name.split("_")[0]
        if name in ("attention_replacement", "mlp_replacement"):  # directed; the host keeps the rest of its block
            for a, b in ((i, j), (j, i)):
                out[(a, b, None)] = _slots(n_layers, {a: ("sublayer", a, b, part)})
        elif name in ("attention_interchange", "mlp_interchange"):
            out[(i, j, None)] = _slots(n_layers, {i: ("sublayer", i, j, part), j: ("sublayer", j, i, part)})
        for u in range(n_units):
            if name == "head_interchange":
                out[(i, j, u)] = _slots(n_layers, {i: ("head", i, j, u), j: ("head", j, i, u)})
            elif name == "head_interchange_paper":
                out[(i, j, u)] = _slots(n_layers, {i: ("head", i, j, u)})
    if name == "deletion":
        out = {(i, None, None): _slots(n_layers, {i: None}) for i in range(n_layers)}
    if name in ("attention_deletion", "mlp_deletion"):  # every block, whatever the pairs; the slot stays
        out = {(i, None, None): _slots(n_layers, {i: ("skip", i, name.split("_")[0])}) for i in range(n_layers)}
    return out


def _executed(v):
    """What each slot of a built variant runs, read from its order and block recipes."""
    recipes = dict(v.blocks)
    out = []
    for b in v.order:
        if b >= 0:
            out.append(("block", b))
        elif recipes[b][0] == "average":
            out.append(("average", recipes[b][1], recipes[b][2]))
        elif recipes[b][0] in ("sublayer", "skip"):
            out.append(recipes[b])
        else:
            out.append(("head", *recipes[b][1:]))
    return tuple(out)


@pytest.mark.parametrize("name", protocol_names())
@pytest.mark.parametrize("n_layers,pair_set,n_units", [(2, "adjacent", 1), (5, "within:2", 2), (6, "all", 3)])
def test_each_protocol_builds_its_definition(name, n_layers, pair_set, n_units):
    got = build_variants([name], pair_set, n_layers, n_units)
    assert {v.protocol for v in got} == {name}
    built = {(v.layer_i, v.layer_j, v.head): _executed(v) for v in got}
    assert len(built) == len(got)  # one variant per row identity
    assert built == _reference(name, n_layers, n_units, pairs_for(pair_set, n_layers))


def test_every_protocol_has_a_reference_here():
    """A new protocol module comes with its line in _reference (its test): a builder without one fails here."""
    for name in protocol_names():
        assert _reference(name, 3, 1, pairs_for("all", 3)), name


@pytest.mark.parametrize("protocol", registered(), ids=lambda p: p.name)
def test_the_metadata_describe_the_rows_built(protocol):
    """columns and pairs (what the aggregate checks) say which identity columns the built variants fill."""
    got = build_variants([protocol.name], "all", 5, 2)
    assert got
    for v in got:
        assert (v.layer_j is not None) == protocol.two_blocks
        assert (v.head is not None) == protocol.heads
        assert bool(v.blocks) == protocol.changes_weights
    if protocol.pairs == "unordered":
        assert all(v.layer_i < v.layer_j for v in got)
    if protocol.pairs == "directed":
        assert {(v.layer_j, v.layer_i) for v in got} == {(v.layer_i, v.layer_j) for v in got}


def test_every_module_of_the_folder_registers_one_protocol():
    """The package imports every module of its folder; each protocol module registers exactly one protocol (its
    builder's module), so a module that forgets to register, or registers twice, is caught here."""
    modules = sorted(m.name for m in pkgutil.iter_modules(protocols.__path__) if m.name != "protocol_registry")
    owners = sorted(p.variants.__module__.rsplit(".", 1)[1] for p in registered())
    assert owners == modules


def test_build_order_is_the_registry_order_whatever_the_request():
    names = list(protocol_names())
    assert [v.protocol for v in build_variants(names[::-1], "adjacent", 3, 1)] == \
        [v.protocol for v in build_variants(names, "adjacent", 3, 1)]
    assert [get_protocol(n).order for n in names] == sorted(get_protocol(n).order for n in names)


def test_a_protocol_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        protocols.register(get_protocol("replacement"))


# ------------------------------------------------------------------------------ the config check (no schema enum)


def _config(weight_protocols):
    cfg = {"models": {"m": {"demo": {"arch": "gpt_neox", "steps": 20, "num_layers": 4}, "revisions": ["step20"],
                            "weight_protocols": weight_protocols}}}
    validate(cfg, composed_schema_file())
    return cfg


def test_weight_protocols_are_checked_against_the_registry():
    check_config(_config(list(protocols.weight_protocol_names())))
    for bad in ("replacement", "averaged"):  # not weight-changing; unknown
        with pytest.raises(ConfigError, match=rf"^models\.m\.weight_protocols: '{bad}' is not a weight-changing"):
            check_config(_config(["averaging", bad]))


# ------------------------------------------------------------------------------ a toy protocol, one module


def _tree_with_toy(tmp_path: Path) -> Path:
    """A copy of the workflow and the package with tests/toy_protocol.py dropped into the protocol folder."""
    tree = repo_copy(tmp_path)
    shutil.copy(TOY, tree / "src" / "swapkl" / "probes" / "protocols" / "toy_average.py")
    return tree


def _jobs(output: str) -> list[dict]:
    """rule, output, input and resources of every job of a dry run."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        header = re.match(r"(?:local)?rule (\w+):\n", block)
        if header:
            fields = dict(re.findall(r"^    (\w+): (.*)$", block, re.M))
            jobs.append({"rule": header.group(1), **fields})
    return jobs


def test_a_toy_protocol_module_reaches_the_cli_the_dag_and_the_report_targets(tmp_path):
    tree = _tree_with_toy(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    help_text = subprocess.run([sys.executable, "-m", "swapkl", "probe", "--help"], env=env, cwd=tree,
                               capture_output=True, text=True, check=True).stdout
    assert "toy_average: toy: slot i runs the average" in " ".join(help_text.split())
    assert "toy_average" not in subprocess.run([sys.executable, "-m", "swapkl", "probe", "--help"],
                                               capture_output=True, text=True, check=True).stdout

    # a local model of 4 blocks whose weights take 2 GB (a sparse file): the runtime shows each protocol's rate
    ckpt = tmp_path / "ckpts" / "step0"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text('{"num_hidden_layers": 4}')
    with open(ckpt / "model.safetensors", "wb") as f:
        f.truncate(2_000_000_000)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"models": {"mine": {"local": str(ckpt.parent), "revisions": ["step0"],
                                                       "weight_protocols": ["toy_average"]}}}))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--cores", "1", "--dry-run", "--forceall",
                          "--replace-workflow-config", "--configfile", str(cfg)],
                         cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    jobs = _jobs(run.stdout)
    toy = "results/probes/mine/step0/toy_average.parquet"
    # one job for the protocols that change no weights (their rates summed), one for the toy protocol
    probes = {job["rule"]: job for job in jobs if job["rule"].startswith("probe")}
    assert set(probes) == {"probe_checkpoint", "probe"}
    # the protocols that change no weights, from the registry: a new one joins this job and this list
    joint = tuple(p.name for p in registered() if not p.changes_weights)
    assert {"replacement", "interchange", "deletion"} <= set(joint) and "toy_average" not in joint
    assert probes["probe_checkpoint"]["output"].split(", ") == [
        *(f"results/probes/mine/step0/{p}.parquet" for p in joint), "results/probes/mine/step0/representation.parquet"]
    assert probes["probe"]["output"] == toy and "protocol=toy_average" in probes["probe"]["wildcards"]
    rates = {"probe_checkpoint": sum(get_protocol(p).minutes_per_gb for p in joint), "probe": 1}
    for rule, job in probes.items():
        assert f"runtime={int(30 + rates[rule] * 2)}," in job["resources"], (rule, job["resources"])
    aggregate = next(job for job in jobs if job["rule"] == "aggregate_results")
    assert toy in aggregate["input"].split(", ")
    target = next(job for job in jobs if job["rule"] == "all")  # the report's targets (get_final_outputs)
    assert toy in target["input"].split(", ")
