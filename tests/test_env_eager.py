"""Each conda environment (envs/*.yaml) provides every third-party module its rules' code can import, read
eagerly: the script's imports and those of every swapkl module it reaches, function-level imports included
(tests/env_imports.py). A module the environment deliberately leaves out must be listed on its ``# lazy-only:``
line, and that list must hold nothing the rules could not import (so it cannot go stale)."""

from __future__ import annotations

import re

import pytest

from env_imports import REPO, provided_imports, third_party_imports
from test_envs import ENVS, pip_dependencies, rule_envs_and_scripts


def lazy_only(env_file) -> set[str]:
    m = re.search(r"^# lazy-only: (.*)$", env_file.read_text(), re.M)
    return set(m.group(1).split()) if m else set()


@pytest.mark.parametrize("env_file", ENVS, ids=lambda p: p.stem)
def test_environment_provides_what_its_rules_import(env_file):
    provided = provided_imports([d.split("==")[0] for d in pip_dependencies(env_file)])
    scripts = sorted({s for _, env, s in rule_envs_and_scripts() if env == env_file.name})
    needed = {s: third_party_imports(REPO / "workflow" / "scripts" / s) for s in scripts}
    missing = {s: sorted(n - provided - lazy_only(env_file)) for s, n in needed.items()}
    assert not any(missing.values()), f"{env_file.name} lacks {missing}"
    reachable = set().union(*needed.values()) - provided
    assert lazy_only(env_file) == reachable, f"{env_file.name}: the lazy-only line should read {sorted(reachable)}"


def test_the_reading_is_eager():
    """lm_eval is imported inside a function of swapkl.relevance.harness_tasks, reached from run_job.py (rule
    score_relevance) through the relevance stage's runner, which the study folder's declaration names."""
    assert "lm_eval" in third_party_imports(REPO / "workflow" / "scripts" / "run_job.py")
