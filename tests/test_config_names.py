"""Names and folders in the config that used to fail only inside a job, refused by the workflow's config
validation before any job starts (swapkl.config.validation, called as common.smk calls it): guide names in the
guide lists (checked against the guide registry, which imports no numpy), and `local`
checkpoint folders. Each message is one line naming the key path, and docs/bad_inputs.md lists it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from direct_config import REPO, refusal
from swapkl.pruning.guides.guide_registry import selecting_guides
from swapkl.pruning.guides import registered

DOC = (REPO / "docs" / "bad_inputs.md").read_text()


def test_the_guides_a_config_may_name_are_those_that_choose_blocks():
    assert set(selecting_guides()) == {g.name for g in registered()} - {"base", "random_mean"}
    assert "base" not in selecting_guides() and "random_mean" not in selecting_guides()
    assert {"interchange", "laco_paper", "fixed", "random"} <= set(selecting_guides())


def test_reading_the_names_imports_no_numpy():
    code = ("import sys; from swapkl.config.checks import selecting_guides; selecting_guides(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'pandas'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def _hub_model(**extra) -> dict:
    return {"models": {"m": {"source": "org/model", "revisions": ["main"], **extra}}}


GUIDE_CASES = {
    "unknown export guide": (
        _hub_model(prune={"enabled": True, "export_guides": ["interchange", "interchnage"]}),
        "models.m.prune.export_guides.1: 'interchnage' is not a pruning guide"),
    "unknown guide whose pruned models relevance scores": (
        _hub_model(prune={"enabled": True}, relevance={"enabled": True, "lm_eval_tasks": ["arc_easy"],
                                                      "pruning_guides": ["bi", "cosine"]}),
        "models.m.relevance.pruning_guides.1: 'cosine' is not a pruning guide"),
    "a derived row as an export guide": (
        _hub_model(prune={"enabled": True, "export_guides": ["random_mean"]}),
        "models.m.prune.export_guides.0: 'random_mean' is not a pruning guide"),
    "unknown guide among the guides to run": (
        _hub_model(prune={"enabled": True, "guides": ["interchange", "sleb"]}),
        "models.m.prune.guides.1: 'sleb' is not a pruning guide"),
}

#: guide lists that name real guides the pruning run leaves out (prune.guides), and what the refusal says
CHOICE_CASES = {
    "an export guide the run leaves out": (
        _hub_model(prune={"enabled": True, "guides": ["interchange", "bi"], "export_guides": ["bi", "sleb_iterative"]}),
        "models.m.prune.export_guides.1: 'sleb_iterative' is not among the guides the pruning runs "
        "(models.m.prune.guides: interchange, bi)", "is not among the guides the pruning runs"),
    "a scored guide the run leaves out": (
        _hub_model(prune={"enabled": True, "guides": ["interchange"]},
                   relevance={"enabled": True, "lm_eval_tasks": ["arc_easy"], "pruning_guides": ["random"]}),
        "models.m.relevance.pruning_guides.0: 'random' is not among the guides the pruning runs "
        "(models.m.prune.guides: interchange)", "is not among the guides the pruning runs"),
    "fixed sets without the fixed guide": (
        _hub_model(prune={"enabled": True, "guides": ["interchange"], "fixed_sets": {"paper": [[3, 5]]}}),
        "models.m.prune.fixed_sets: fixed sets are evaluated by the guide 'fixed', which models.m.prune.guides "
        "leaves out", "models.m.prune.fixed_sets: fixed sets are evaluated by the guide 'fixed'"),
    "a clustered region without a clustered guide": (
        _hub_model(prune={"enabled": True, "guides": ["interchange"], "clustered_region": [2, 6]}),
        "models.m.prune.clustered_region: neither clustered guide (interchange_clustered, "
        "replacement_max_clustered) is in models.m.prune.guides", "models.m.prune.clustered_region: neither"),
}


@pytest.mark.parametrize("name", list(CHOICE_CASES))
def test_a_guide_list_beyond_the_guides_that_run_is_refused(name):
    cfg, want, listed = CHOICE_CASES[name]
    message = refusal(cfg)
    assert message == f"Invalid config: {want}" and "\n" not in message
    assert listed in DOC  # the catalogue lists the case


def test_a_guide_choice_that_covers_its_lists_passes():
    assert refusal(_hub_model(prune={"enabled": True, "guides": ["interchange", "fixed", "random"],
                                     "export_guides": ["interchange"], "fixed_sets": {"paper": [[3, 5]]}},
                              relevance={"enabled": True, "lm_eval_tasks": ["arc_easy"],
                                         "pruning_guides": "all"})) is None


@pytest.mark.parametrize("name", list(GUIDE_CASES))
def test_an_unknown_guide_name_is_refused_naming_its_key_path(name):
    cfg, start = GUIDE_CASES[name]
    message = refusal(cfg)
    want = f"Invalid config: {start} that chooses blocks (swapkl.pruning.guides): choose from " + ", ".join(
        selecting_guides())
    assert message == want and "\n" not in message
    assert "`" + start in DOC.replace("`Invalid config: ", "`")  # the catalogue lists the case


def test_known_guide_names_pass():
    assert refusal(_hub_model(prune={"enabled": True, "export_guides": ["interchange", "fixed"]},
                              relevance={"enabled": True, "lm_eval_tasks": ["arc_easy"],
                                         "pruning_guides": "all"})) is None


def _checkpoint(folder: Path, *, config=True, weights=True) -> None:
    folder.mkdir(parents=True)
    if config:
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 4}))
    if weights:
        (folder / "model.safetensors").write_bytes(b"\0" * 16)


def _local(tmp_path, **models) -> str | None:
    base = {"revisions": ["step0", "step1"]}
    return refusal({"models": {name: {**base, **m} for name, m in models.items()}}, base_dir=tmp_path)


LOCAL_CASES = {
    "local folder that does not exist": (
        lambda ck: None, {},
        "models.m.local: 'ckpts' is not a folder of checkpoints (does not exist)"),
    "local revision folder that does not exist": (
        lambda ck: _checkpoint(ck / "step0"), {},
        "models.m.revisions.1: the local checkpoint 'ckpts/step1' does not exist"),
    "local revision without config.json": (
        lambda ck: (_checkpoint(ck / "step0"), _checkpoint(ck / "step1", config=False)), {},
        "models.m.revisions.1: the local checkpoint 'ckpts/step1' has no config.json (not a Hugging Face checkpoint)"),
    "local revision without weights": (
        lambda ck: (_checkpoint(ck / "step0"), _checkpoint(ck / "step1", weights=False)), {},
        "models.m.revisions.1: the local checkpoint 'ckpts/step1' has no weight files (*.safetensors)"),
    "revision of a model on a local model's weights that the folder lacks": (
        lambda ck: (_checkpoint(ck / "step0"), _checkpoint(ck / "step1")),
        {"m-paper": {"same_weights_as": "m", "revisions": ["step1", "step2"]}},
        "models.m-paper.revisions.1: the local checkpoint 'ckpts/step2' does not exist"),
}


@pytest.mark.parametrize("name", list(LOCAL_CASES))
def test_a_local_checkpoint_that_cannot_load_is_refused_before_the_run(name, tmp_path):
    make, others, want = LOCAL_CASES[name]
    make(tmp_path / "ckpts")
    assert _local(tmp_path, m={"local": "ckpts"}, **others) == f"Invalid config: {want}"
    assert f"`Invalid config: {want}`" in DOC


def test_loadable_local_checkpoints_pass_and_a_disabled_model_is_not_looked_at(tmp_path):
    for revision in ("step0", "step1"):
        _checkpoint(tmp_path / "ckpts" / revision)
    assert _local(tmp_path, m={"local": "ckpts"}) is None
    assert _local(tmp_path, m={"local": "ckpts"}, gone={"local": "elsewhere", "enabled": False}) is None
