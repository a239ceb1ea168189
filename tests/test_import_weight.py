"""Every Snakemake job is a fresh Python process, so what a workflow script imports is paid once per job: the
table, figure and aggregation scripts must start without torch or transformers, the model scripts without scipy
or matplotlib, and ``swapkl --help`` without torch. Each script's modules are read from its ``from swapkl...
import`` lines and imported in a fresh interpreter; the heavy packages it may not load come from the two tables
below, in one of which every script must stand (a new script is checked as soon as it is classified)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"

MODEL_PACKAGES = ("torch", "transformers", "lm_eval", "datasets", "peft", "sklearn")
ANALYSIS_PACKAGES = ("scipy", "matplotlib")

#: scripts that read and write tables (or draw, or build text files): no model packages; no scipy unless they
#: call scipy.stats themselves (value: the analysis packages their modules may import)
TABLE_SCRIPTS = {
    "aggregate_covariates": (), "aggregate_downstream": (), "aggregate_healed": (), "aggregate_pruning": (),
    "aggregate_relevance": (), "aggregate_results": (), "aggregate_spans": (),
    "aggregate_task_pruning": (), "aggregate_decisions": (), "aggregate_sublayers": (), "aggregate_sublayer_pruning": (),
    "combine_tables": (), "combine_optimal_search": (),
    "measure_test_agreement": (), "summarise_convergence": (), "summarise_domain_slices": (),
    "summarise_rope_counterfactual": (), "summarise_scorecard": (), "summarise_answer": (),
    "summarise_relevance": ("scipy",),  # the heterogeneity test's chi-squared tail
    "summarise_seeds": ("scipy",),  # the F test across seeds
    "plot_figure": (), "render_table": (), "build_demo_last_word": (), "build_demo_tasks": (),
    "split_demo_tasks": (), "prepare_demo_text": (), "fetch_paper_inputs": (), "download_checkpoint": (),
    "stamp_input": (),  # hashes files: the standard library only
}
#: scripts that load or train a model (torch): no scipy or matplotlib at import; two summaries read the adapter
#: registry (torch) for each checkpoint's position encoding
MODEL_SCRIPTS = {
    "run_job",  # the probe, span and prune rules (rule_jobs imports each stage's torch side when it runs)
    "construct_snowball", "export_pruned_models",
    "prepare_pe_text", "train_demo_model",
    "train_pe_model", "summarise_scaling", "summarise_pe_ablation", "convert_gguf",
}
HEAVY = MODEL_PACKAGES + ANALYSIS_PACKAGES


def script_imports(path: Path) -> list[str]:
    """The ``from swapkl... import ...`` statements of a workflow script."""
    return re.findall(r"^from swapkl[\w.]* import [^\n]+", path.read_text(), flags=re.M)


def loaded(code: str) -> set[str]:
    """The heavy packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([p for p in {HEAVY!r} if p in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def forbidden(script: str) -> set[str]:
    if script in TABLE_SCRIPTS:
        return set(MODEL_PACKAGES) | set(ANALYSIS_PACKAGES) - set(TABLE_SCRIPTS[script])
    return set(ANALYSIS_PACKAGES)


def test_every_script_is_classified_once():
    scripts = {p.stem for p in SCRIPTS.glob("*.py")}
    assert not set(TABLE_SCRIPTS) & MODEL_SCRIPTS
    assert scripts == set(TABLE_SCRIPTS) | MODEL_SCRIPTS, "classify each workflow script in one table above"
    assert all(script_imports(SCRIPTS / f"{s}.py") for s in scripts)


@pytest.mark.parametrize("script", sorted(p.stem for p in SCRIPTS.glob("*.py")))
def test_a_script_imports_only_what_its_job_uses(script):
    heavy = loaded("\n".join(script_imports(SCRIPTS / f"{script}.py"))) & forbidden(script)
    assert not heavy, f"workflow/scripts/{script}.py imports {sorted(heavy)}"


def test_figure_modules_import_no_model_packages():
    """plot_figure.py imports each figure's module when it draws it (swapkl.figures.figure_registry)."""
    code = ("from swapkl.figures.figure_registry import figures\n"
            "for f in figures().values():\n    f.function()")
    heavy = loaded(code) & set(MODEL_PACKAGES)
    assert not heavy, f"the figure modules import {sorted(heavy)}"


@pytest.mark.parametrize("argv", [["--help"], ["aggregate", "--help"], ["figures", "--help"],
                                  ["scorecard", "--help"], ["provenance", "--help"]], ids=" ".join)
def test_cli_help_imports_no_model_packages(argv):
    code = ("import contextlib, io\nfrom swapkl.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        main({argv!r})\n"
            "    except SystemExit:\n        pass")
    heavy = loaded(code) & set(MODEL_PACKAGES)
    assert not heavy, f"swapkl {' '.join(argv)} imports {sorted(heavy)}"


def test_a_table_job_runs_without_model_packages_and_names_their_versions(tmp_path):
    """Not only the imports: a combine step's run, provenance included, loads no model package (the versions of
    torch and transformers come from their installed metadata), and records the versions this process imports."""
    import torch
    import transformers

    a, b, out = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "all.parquet"
    code = ("import pandas as pd\nfrom swapkl.tables.parquet_io import write_parquet\n"
            "from swapkl.tables.combine import concat_tables\n"
            f"write_parquet(pd.DataFrame({{'x': [1]}}), {str(a)!r}, {{}})\n"
            f"write_parquet(pd.DataFrame({{'x': [2]}}), {str(b)!r}, {{}})\n"
            f"concat_tables([{str(a)!r}, {str(b)!r}], {str(out)!r})")
    heavy = loaded(code) & set(MODEL_PACKAGES)
    assert not heavy, f"a combine step loads {sorted(heavy)}"
    from swapkl.tables import provenance

    prov = provenance.read(str(out))
    assert prov["torch"] == torch.__version__ and prov["transformers"] == transformers.__version__
    assert provenance.installed_version("torch") == torch.__version__  # imported here: the module's version
    assert provenance.installed_version("swapkl-no-such-package") is None
