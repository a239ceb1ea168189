"""Each conda environment of the workflow (envs/*.yaml) holds what its rules' scripts import.

No conda channel is reachable here, so this builds the next best thing: for each environment, a fresh
virtual environment with exactly its pip dependencies (same Python minor version), swapkl from this
checkout without dependencies (as envs/*.post-deploy.sh installs it), and then runs the import
statements of every workflow script whose rule uses that environment.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from env_imports import third_party_imports

REPO = Path(__file__).resolve().parents[1]
ENVS = sorted((REPO / "envs").glob("*.yaml"))

pytestmark = pytest.mark.slow


def rule_envs_and_scripts() -> list[tuple[str, str, str]]:
    """(rule, env file name, script file name) of every rule in workflow/rules and the study folders that names both
    (rules made by `use rule ... with:` share their parent's environment and script; the plot rules, made in a loop
    over the figure registry by figures.smk, are one unnamed `rule:` block)."""
    found = []
    studies = sorted((REPO / "src" / "swapkl" / "studies").glob("*/rules.smk"))  # a study folder's rule file
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")) + studies:
        for block in re.split(r"\n(?=[ ]*rule(?: \w+)?:)", smk.read_text()):
            rule = re.match(r"[ ]*rule(?: (\w+))?:", block)
            env = re.search(r"^[ ]+conda:\n\s+(?:\"\.\./\.\./envs/|workflow_env\(\")([\w.-]+)\"", block, re.M)
            script = re.search(r"^[ ]+script:\n\s+(?:\"\.\./scripts/|workflow_script\(\")([\w.-]+)\"", block, re.M)
            if rule and (env or script):
                name = rule.group(1) or f"{smk.stem} (made in a loop)"
                assert env and script, f"rule {name} names a script or an environment but not both"
                found.append((name, env.group(1), script.group(1)))
    return found


def pip_dependencies(env_file: Path) -> list[str]:
    deps = yaml.safe_load(env_file.read_text())["dependencies"]
    pips = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    return [req for group in pips for req in group]


def script_imports(script: Path) -> str:
    """The script's import statements (module level), as source."""
    nodes = [n for n in ast.parse(script.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(ast.unparse(n) for n in nodes)


# Runs in the environment's venv: {script: import statements} on stdin; prints {script: the error's last line}
# of the scripts whose imports fail (a module that failed to import is not left in sys.modules, so a later
# script that imports it fails the same way).
RUN_IMPORTS = """
import json, sys
failures = {}
for script, code in json.loads(sys.stdin.read()).items():
    try:
        exec(compile(code, script, "exec"), {"__name__": "__main__"})
    except Exception as exc:
        failures[script] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failures))
"""


def test_every_rule_with_a_script_has_an_environment():
    rules = rule_envs_and_scripts()
    assert {env for _, env, _ in rules} == {p.name for p in ENVS}
    assert {script for _, _, script in rules} == {p.name for p in (REPO / "workflow" / "scripts").glob("*.py")}


@pytest.mark.parametrize("env_file", ENVS, ids=lambda p: p.stem)
def test_every_dependency_is_pinned(env_file):
    deps = pip_dependencies(env_file)
    assert deps and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+-]*", d) for d in deps), deps
    python = [d for d in yaml.safe_load(env_file.read_text())["dependencies"] if isinstance(d, str)
              and d.startswith("python")]
    assert python == [f"python={sys.version_info.major}.{sys.version_info.minor}"], python


@pytest.mark.parametrize("env_file", ENVS, ids=lambda p: p.stem)
def test_scripts_import_in_a_venv_of_exactly_the_environment(env_file, tmp_path):
    scripts = sorted({script for _, env, script in rule_envs_and_scripts() if env == env_file.name})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # --no-compile: no .pyc files written ahead (torch alone has thousands); imports compile what they load
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
                          "--disable-pip-version-check", *pip_dependencies(env_file)],
                         capture_output=True, text=True, timeout=3000)
    assert pip.returncode == 0, pip.stderr[-3000:]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(REPO / "src")  # swapkl itself, without its dependencies
    lazy_only = set(re.findall(r"^# lazy-only: (.*)$", env_file.read_text(), re.M)[0].split()) \
        if "# lazy-only:" in env_file.read_text() else set()
    codes = {}
    for script in scripts:
        # the script's own imports, then every module its code paths can import (function-level ones too)
        eager = sorted(third_party_imports(REPO / "workflow" / "scripts" / script) - lazy_only)
        codes[script] = script_imports(REPO / "workflow" / "scripts" / script) + "".join(f"\nimport {m}" for m in eager)
    # one interpreter runs every script's imports (starting one per script costs a torch import each)
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", RUN_IMPORTS], input=json.dumps(codes), env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failures == {}, f"{env_file.name}: {failures}"
