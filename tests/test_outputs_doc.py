"""docs/outputs.md documents every results table, each in a paragraph of its own that names every column of that
table (issue 36: it detailed 5 of 21 tables; later 14 of 24, with the others only in topic files).

A table's paragraph opens with a line ``**Title** (`results/<name>.parquet` ...`` and runs to the next such line
or the next heading. A column counts when it appears inside backticks in the paragraph's prose (outside code
blocks, after the opening path). The columns come from the code that writes each table: the schemas of
:mod:`swapkl.tables.schemas`, the column constants of the writers that keep their own, and, for the writers that
build their rows in code, their row builders run on a tiny synthetic input (with the identity columns that a
model-loading runner adds inline read from its source). The documented tables must be the report's results tables
(``RESULT_TABLES`` in workflow/rules/report.smk) plus :data:`EXTRA_TABLES`, and the Files block lists each."""

from __future__ import annotations

import ast
import inspect
import json
import re
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.config.targets import result_tables as report_tables
from swapkl.study import STUDIES
from swapkl.tables import schemas

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "outputs.md"
REPORT_RULES = ROOT / "workflow" / "rules" / "report.smk"

#: documented tables the report does not draw through RESULT_TABLES: the scorecard (its own HTML view, rule
#: summarise_scorecard) and the per-checkpoint probe files every other table is computed from
EXTRA_TABLES = ("paper_scorecard", "probes/{model}/{revision}/{protocol}", "probes/{model}/{revision}/representation")

#: every schema of swapkl.tables.schemas -> the documented table whose paragraph names its columns (the
#: per-checkpoint schemas of pruning, covariates and spans are subsets of their results table's)
SCHEMA_TABLES = {
    "PROBE_SCHEMA": "probes/{model}/{revision}/{protocol}",
    "REPR_SCHEMA": "probes/{model}/{revision}/representation",
    "PRUNING_SCHEMA": "pruning", "PRUNING_RUN_SCHEMA": "pruning",
    "AGREEMENT_SCHEMA": "pruning_agreement",
    "COVARIATE_FILE_SCHEMA": "covariates", "COVARIATES_SCHEMA": "covariates",
    "COVARIATE_CORRELATIONS_SCHEMA": "covariate_correlations",
    "SPANS_FILE_SCHEMA": "spans", "SPANS_SCHEMA": "spans",
    "OPTIMAL_SEARCH_SCHEMA": "optimal_search",
    "SNOWBALL_SCHEMA": "snowball",
    "SEEDS_SCHEMA": "seeds",
    "RELEVANCE_SCHEMA": "relevance",
    "PE_ABLATION_SCHEMA": "pe_ablation",
    "TASK_PRUNING_SCHEMA": "seed003_pruning",
    "DOWNSTREAM_SCHEMA": "downstream",
    "DECISIONS_SCHEMA": "decisions",
}
#: the pair sets whose ``in_*`` columns the aggregate's paragraph names (the configs' pair sets)
PAIR_SETS = ("adjacent", "within:3", "all")

MARKER = re.compile(r"^\*\*[^*\n]+\*\* \(`results/([^`]+)\.parquet`", re.M)


def documented_names(text: str) -> set[str]:
    """Identifiers inside backticks in the prose of ``text``; file paths (`results/...`, `{model}` templates) do
    not name columns."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    spans = [s for s in re.findall(r"`([^`\n]+)`", prose) if not s.startswith("results/") and "{" not in s]
    return {name for span in spans for name in re.findall(r"[A-Za-z_]\w*", span)}


def table_paragraphs(text: str) -> dict[str, str]:
    """Table name -> its paragraph's text after the opening path (a name documented twice is an error)."""
    marks = list(MARKER.finditer(text))
    out = {}
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        heading = re.search(r"^#", text[m.end():end], re.M)
        body = text[m.end():m.end() + heading.start() if heading else end]
        assert m.group(1) not in out, f"docs/outputs.md documents results/{m.group(1)}.parquet twice"
        out[m.group(1)] = body
    return out


def result_tables() -> tuple[str, ...]:
    """The name patterns of RESULT_TABLES in workflow/rules/report.smk (swapkl.config.targets.result_tables), but
    the tables of studies that declare their columns: docs/studies.md documents those (tests/test_study_folders.py)."""
    assert "RESULT_TABLES = result_tables()" in REPORT_RULES.read_text()
    declared = {table for study in STUDIES.values() for table in study.columns}
    return tuple(t for t in report_tables() if t not in declared)


def _keywords(function, callee: str) -> list[str]:
    """Keyword names, and string keys of dict literals passed, of every call to ``callee`` (a function or method
    name) in ``function``'s source: the columns a model-loading runner adds to its rows inline."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name == callee:
            out += [k.arg for k in node.keywords if k.arg]
            out += [k.value for a in node.args if isinstance(a, ast.Dict) for k in a.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    assert out, f"{function.__qualname__} has no call to {callee} with named columns"
    return list(dict.fromkeys(out))


def _pair_rows(models, revision="r", n_layers=4) -> pd.DataFrame:
    """Adjacent pair rows of the aggregate for ``models``, enough for the studies that read them."""
    rows = [dict(kind="pair", model=m, revision=revision, n_layers=n_layers, duplicate_of=None, distance=1,
                 layer_i=i, layer_j=i + 1, d_repl_max=0.2 + 0.1 * i + 0.01 * k, d_inter=0.1 + 0.02 * i,
                 ratio_ir=0.5 + 0.1 * i - 0.05 * k, gap=0.1, class_repl="conditional", class_inter="strong")
             for k, m in enumerate(models) for i in range(n_layers - 1)]
    return pd.DataFrame(rows)


def _scaling_columns() -> list[str]:
    from safetensors.numpy import save_file

    from swapkl.studies.scaling.stats import checkpoint_facts, scaling_row
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
        save_file({"w": np.zeros((2, 2), dtype=np.float32)}, str(Path(d) / "model.safetensors"))
        facts = checkpoint_facts(d)
    return list(scaling_row(_pair_rows(["m"]), "m", "r", facts))


def _jacobian_columns() -> list[str]:
    from swapkl.studies.jacobian.run import run_jacobian, summarise
    return list(summarise(np.ones((2, 3)), **dict.fromkeys(_keywords(run_jacobian, "summarise"))).columns)


def _convergence_columns() -> list[str]:
    from swapkl.studies.convergence.stats import build_convergence, convergence_rows
    kl = np.random.default_rng(0).uniform(0.1, 1.0, size=(3, 2, 4))
    rows = convergence_rows(kl, np.ones(4), (2,), 2, 0)
    return _keywords(build_convergence, "append") + list(rows[0])


def _domain_slices_columns() -> list[str]:
    from swapkl.studies.domain_slices.stats import slice_rows
    pruning = pd.DataFrame([dict(model=m, revision="r", random_draw=np.nan, feasible=True, guide="g", budget=b,
                                 fixed_set=None, delta_ppl_pct=float(b + k)) for k, m in enumerate(("ref", "slice"))
                            for b in (1, 2, 3)])
    return list(slice_rows(pruning, model="slice", reference="ref", revision="r").columns)


def _rope_columns() -> list[str]:
    from swapkl.studies.rope_counterfactual.stats import counterfactual_table
    return list(counterfactual_table(_pair_rows(["on", "off"]), model_on="on", model_off="off", revision="r").columns)


def _predictor_validity_columns() -> list[str]:
    from swapkl.studies.predictor_validity.run import SCORES, run_predictor_validity, single_layer_costs, validity
    costs = pd.DataFrame({c: [0, 1, 2] for c in _keywords(single_layer_costs, "DataFrame")})
    pairs = pd.DataFrame({"layer_i": [0, 0, 1], "layer_j": [1, 2, 2], **{c: [0.1, 0.3, 0.2] for c in SCORES.values()}})
    pair_rows, summary = validity(costs, pairs)
    return [*costs.columns, *pair_rows.columns, *summary.columns, *_keywords(run_predictor_validity, "assign")]


def _healed_columns() -> list[str]:
    from swapkl.probes.protocols.interchange import interchange
    from swapkl.probes.protocols.replacement import replacement
    from swapkl.recovery.heal_settings import HealSettings
    from swapkl.recovery.healed import _rows, add_gaps, run_healed_probe
    meta = dict.fromkeys(_keywords(run_healed_probe, "dict"))
    records = [dict(step=0, seq_kl_sum=[1.0, 2.0], seq_tokens=[3, 4])]
    rows = [row for protocol, v in (("healed_replacement", replacement(0, 1, 2)),
                                    ("healed_replacement", replacement(1, 0, 2)),
                                    ("healed_interchange", interchange(0, 1, 2)))
            for row in _rows(protocol, v, records, HealSettings(steps=0), meta)]
    return list(add_gaps(pd.DataFrame(rows)).columns)


def table_columns() -> dict[str, list[str]]:
    """Documented table name -> every column its writer gives it."""
    from swapkl.paper.scorecard import COLUMNS as SCORECARD
    from swapkl.probes.aggregate import output_schema
    from swapkl.probes.disagreement import COLUMNS as TEST_AGREEMENT
    from swapkl.recovery.recovery_table import COLUMNS as RECOVERY

    tables: dict[str, list[str]] = {}
    found = {name: value for name, value in vars(schemas).items() if isinstance(value, pa.Schema)}
    assert not set(found) - set(SCHEMA_TABLES), \
        f"schemas {sorted(set(found) - set(SCHEMA_TABLES))}: name the table they belong to in SCHEMA_TABLES"
    for name, table in SCHEMA_TABLES.items():
        tables.setdefault(table, []).extend(found[name].names)
    tables["swapkl"] = output_schema(list(PAIR_SETS)).names
    tables["relevance_stats"] = list(schemas.RELEVANCE_STATS_COLUMNS)
    tables["seed003_tables"] = list(schemas.SEED003_TABLES_COLUMNS)
    tables["paper_scorecard"] = list(SCORECARD)
    tables["recovery"] = list(RECOVERY)
    tables["test_agreement"] = list(TEST_AGREEMENT)
    tables["scaling"] = _scaling_columns()
    tables["jacobian"] = _jacobian_columns()
    tables["convergence"] = _convergence_columns()
    tables["domain_slices"] = _domain_slices_columns()
    tables["rope_counterfactual"] = _rope_columns()
    tables["predictor_validity"] = _predictor_validity_columns()
    tables["healed"] = _healed_columns()
    return {table: list(dict.fromkeys(columns)) for table, columns in tables.items()}


def missing_columns(text: str, tables: dict[str, list[str]]) -> dict[str, list[str]]:
    """Table -> its columns that its paragraph of ``text`` does not name (every column where it has none)."""
    paragraphs = table_paragraphs(text)
    out = {}
    for table, columns in tables.items():
        named = documented_names(paragraphs.get(table, ""))
        if [c for c in columns if c not in named]:
            out[table] = [c for c in columns if c not in named]
    return out


def test_each_table_paragraph_names_every_column_of_its_table():
    tables = table_columns()
    assert len(tables) >= 25 and {"probes/{model}/{revision}/{protocol}", "swapkl", "healed"} <= set(tables)
    missing = missing_columns(DOC.read_text(), tables)
    assert not missing, "docs/outputs.md: columns missing from their table's paragraph:\n" + "\n".join(
        f"  results/{table}.parquet: {', '.join(columns)}" for table, columns in missing.items())


def test_the_documented_tables_are_the_reports_results_tables():
    documented = set(table_paragraphs(DOC.read_text()))
    patterns = result_tables()
    assert len(patterns) >= 20
    for pattern in patterns:
        matches = sorted(name for name in documented if re.fullmatch(pattern, name))
        assert len(matches) == 1, f"results table {pattern!r} (report.smk RESULT_TABLES) has {matches or 'no'} " \
                                  "paragraph in docs/outputs.md"
    stray = sorted(n for n in documented - set(EXTRA_TABLES) if not any(re.fullmatch(p, n) for p in patterns))
    assert not stray, f"docs/outputs.md documents tables the report does not list: {stray}"
    assert documented == set(table_columns()), "the documented tables and the tables whose columns the test " \
                                               f"knows differ: {sorted(documented ^ set(table_columns()))}"


def test_the_files_block_lists_every_results_table():
    files = re.search(r"^## Files\n+```\n(.*?)^```", DOC.read_text(), re.M | re.S)
    assert files, "docs/outputs.md: no Files block"
    absent = [name for name in table_paragraphs(DOC.read_text()) if not name.startswith("probes/")
              and not re.search(rf"^\s+{re.escape(name)}\.parquet\b", files.group(1), re.M)]
    assert not absent, f"the Files block of docs/outputs.md lacks {', '.join(f'{n}.parquet' for n in absent)}"


def test_the_check_can_fail():
    named = documented_names("`kl_mean` and `ppl_ci_low/high`\n```\n`spearman`\n```\nplain frac_inter_le_repl, "
                             "`results/a/{model}/{revision}.parquet`, `jacobian/{model}`")
    assert named == {"kl_mean", "ppl_ci_low", "high"}  # code blocks, plain words and paths do not count
    text = ("**A** (`results/a.parquet`): `x`, `y`.\n\n**B** (`results/b.parquet`): `z`\n\n## Next\n\n`w`\n")
    assert missing_columns(text, {"a": ["x", "y"], "b": ["z", "x", "w"], "c": ["v"]}) == {"b": ["x", "w"], "c": ["v"]}
