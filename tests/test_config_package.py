"""swapkl.config as a package: pure (importable without torch, numpy or pandas, as where Snakemake runs), its
schema validation fills the same defaults as snakemake.utils.validate, and its small parsers."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from direct_config import composed_schema_file
from swapkl.config import ConfigError
from swapkl.probes.pair_sets import pair_reach, parse_pair_set, widest_pair_set
from swapkl.hub.revision_names import last_revision, step_of
from swapkl.config.schema_validation import load_schema, validate_schema
from swapkl.config.strict_yaml import check_config_text

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PUBLISHED = [REPO / "config.yaml", REPO / "config" / "demo.yaml", REPO / "config" / "demo_smoke.yaml",
             REPO / "config" / "one_model.yaml"]
MINIMAL = {"models": {"m": {"source": "org/model", "revisions": ["main"], "prune": {"enabled": True}}}}


def test_the_package_imports_without_torch_numpy_or_pandas():
    code = ("import importlib, pkgutil, sys, swapkl.config as c\n"
            "for m in pkgutil.iter_modules(c.__path__): importlib.import_module('swapkl.config.' + m.name)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy', 'pandas', 'snakemake'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("cfg", [*PUBLISHED, MINIMAL], ids=lambda c: c.name if isinstance(c, Path) else "minimal")
def test_the_schema_defaults_are_those_snakemake_fills_in(cfg):
    cfg = yaml.safe_load(cfg.read_text()) if isinstance(cfg, Path) else cfg
    ours, snakemakes = copy.deepcopy(cfg), copy.deepcopy(cfg)
    validate_schema(ours, load_schema(SCHEMA))
    validate(snakemakes, composed_schema_file())
    assert ours == snakemakes
    assert ours != cfg  # defaults were filled in


@pytest.mark.parametrize("change", [{"probe": {"n_boot": 0}}, {"models": {"m": {"source": "org/model",
                                                                                  "revisions": ["step01"]}}}])
def test_a_schema_error_names_the_same_field_as_snakemakes(change):
    cfg = {**copy.deepcopy(MINIMAL), **change}
    with pytest.raises(ConfigError) as ours:
        validate_schema(copy.deepcopy(cfg), load_schema(SCHEMA))
    with pytest.raises(WorkflowError) as theirs:
        validate(copy.deepcopy(cfg), composed_schema_file())
    cause = theirs.value.__context__
    assert isinstance(cause, jsonschema.ValidationError)
    assert str(ours.value) == ".".join(map(str, cause.absolute_path)) + ": " + cause.message


def test_steps_and_the_last_revision():
    assert [step_of(r) for r in ("step0", "step143000", "main", None, "steps1")] == [0, 143000, None, None, None]
    assert last_revision(["step1000", "step143000", "step0"]) == "step143000"
    assert last_revision(["main", "step10"]) == "step10"  # not all steps: the last listed


def test_pair_sets():
    assert [parse_pair_set(s) for s in ("adjacent", "within:3", "all")] == [("adjacent", 1), ("within", 3),
                                                                            ("all", None)]
    assert pair_reach("all") == float("inf") and pair_reach("within:4") == 4
    assert widest_pair_set(["within:2", "adjacent", "within:5"]) == "within:5"
    assert widest_pair_set(["adjacent", "within:1"]) == "adjacent"
    assert widest_pair_set(["adjacent", "all"]) == "all"
    for bad in ("within:0", "neighbours"):
        with pytest.raises(ConfigError, match="unknown pair set"):
            parse_pair_set(bad)


def test_a_key_given_twice_names_the_file_and_both_lines(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("models:\n  m: {}\n  n: {}\n  m: {}\n")
    with pytest.raises(ConfigError) as err:
        check_config_text([str(path)])
    assert str(err.value) == (f"{path}: line 4: key 'm' appears a second time in one mapping (first on line 2); "
                              "YAML would silently keep only the last")
    path.write_text("models: [unclosed\n")
    check_config_text([str(path)])  # a file YAML cannot parse: Snakemake reports it
