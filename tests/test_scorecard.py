"""The reproduction scorecard: every status from synthetic result tables, the real registry's specs checked
against the real table schemas, the demo-like case (nothing run: every row `not run`), the HTML table, and
the command line end to end on Parquet files."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from swapkl.cli import main
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.schemas import AGREEMENT_SCHEMA, PRUNING_SCHEMA, RELEVANCE_STATS_COLUMNS, aggregate_schema
from swapkl.paper.scorecard import COLUMNS, build_scorecard, load_registry, scorecard_html, with_directions
from swapkl.recovery.recovery_table import COLUMNS as RECOVERY_COLUMNS
from swapkl.studies.domain_slices.stats import KEYS as DOMAIN_SLICE_KEYS
from swapkl.studies.rope_counterfactual.stats import counterfactual_table

REGISTRY = """
tolerances:
  pct: {rel: 0.10, abs: 1.0}
  count: {rel: 0.0, abs: 0.0}
  ratio: {rel: 0.10, abs: 0.03}
entries:
- {source: s, quantity: fixed n3 close, model: M, needs: org/M, published: 40.0, unit: pct,
   compute: {table: pruning, where: {guide: fixed, fixed_set: a, budget: 3}, column: delta_ppl_pct}}
- {source: s, quantity: fixed n5 far, model: M, needs: org/M, published: 80.0, unit: pct,
   compute: {table: pruning, where: {guide: fixed, fixed_set: a, budget: 5}, column: delta_ppl_pct}}
- {source: s, quantity: mean of draws, model: M, needs: org/M, published: 10.0, unit: pct,
   compute: {table: pruning, where: {guide: fixed, fixed_set: r, budget: 1}, column: delta_ppl_pct, agg: mean}}
- {source: s, quantity: ratio, model: M, needs: org/M, published: 0.5, unit: ratio,
   compute: {ratio: [{table: pruning, where: {guide: fixed, fixed_set: a, budget: 3}, column: delta_ppl_pct},
                     {table: pruning, where: {guide: fixed, fixed_set: a, budget: 5}, column: delta_ppl_pct}]}}
- {source: s, quantity: count, model: M, needs: org/M, published: 2, unit: count,
   compute: {table: aggregate, where: {kind: pair, in_adjacent: true}, column: d_inter, agg: count_below,
             threshold: 0.05}}
- {source: s, quantity: infeasible, model: M, needs: org/M, published: 5.0, unit: pct,
   compute: {table: pruning, where: {guide: interchange, budget: 4}, column: delta_ppl_pct}}
- {source: s, quantity: other model, model: N, needs: org/N, published: 5.0, unit: pct,
   compute: {table: pruning, where: {guide: interchange, budget: 1}, column: delta_ppl_pct}}
- {source: s, quantity: no table, model: M, needs: org/M, published: 0.5, unit: ratio,
   compute: {table: relevance_stats, where: {reference: bi}, column: severe_misranking, agg: mean,
             chance: severe_chance, p_value: severe_p}}
- {source: s, quantity: none, model: M, needs: org/M, published: 1.0, unit: pct, compute: null, reason: no probe}
"""


def _tables():
    pruning = pd.DataFrame([
        dict(model="M", guide="fixed", fixed_set="a", budget=3, random_draw=None, delta_ppl_pct=40.9),
        dict(model="M", guide="fixed", fixed_set="a", budget=5, random_draw=None, delta_ppl_pct=100.0),
        dict(model="M", guide="fixed", fixed_set="r", budget=1, random_draw=0, delta_ppl_pct=8.0),
        dict(model="M", guide="fixed", fixed_set="r", budget=1, random_draw=1, delta_ppl_pct=13.0),
        dict(model="M", guide="interchange", fixed_set=None, budget=4, random_draw=None, delta_ppl_pct=float("nan")),
        dict(model="X", guide="interchange", fixed_set=None, budget=1, random_draw=None, delta_ppl_pct=5.0)])
    aggregate = pd.DataFrame(dict(model="M", kind="pair", in_adjacent=[True, True, True, False],
                                  d_inter=[0.01, 0.04, 0.2, 0.001]))
    return {"pruning": pruning, "aggregate": aggregate}


def test_every_status_from_synthetic_tables(tmp_path):
    reg = tmp_path / "reg.yaml"
    reg.write_text(REGISTRY)
    df = build_scorecard(_tables(), reg).set_index("quantity")
    assert list(build_scorecard(_tables(), reg).columns) == COLUMNS
    want = {"fixed n3 close": ("reproduced", 40.9), "fixed n5 far": ("differs", 100.0),
            "mean of draws": ("reproduced", 10.5), "ratio": ("differs", 0.409),  # |0.409 - 0.5| > 0.05
            "count": ("reproduced", 2.0)}
    for q, (status, value) in want.items():
        assert df.loc[q, "status"] == status, q
        assert df.loc[q, "swapkl"] == pytest.approx(value), q
    assert df.loc["fixed n5 far", "rel_diff"] == pytest.approx(0.25)
    assert df.loc["infeasible", "status"] == "not run (infeasible in swapkl)"
    assert df.loc["other model", "status"] == "not run (needs org/N)"
    assert df.loc["no table", "status"] == "not run (needs org/M)"
    assert df.loc["none", "status"] == "not run (no counterpart: no probe)"
    for q in ("infeasible", "other model", "no table", "none"):
        assert pd.isna(df.loc[q, "swapkl"]) and pd.isna(df.loc[q, "rel_diff"])
    assert df.loc["fixed n3 close", "setting"] == "M: pruning [guide=fixed, fixed_set=a, budget=3] delta_ppl_pct"


def test_a_registry_typo_is_an_error_not_a_silent_row(tmp_path):
    reg = tmp_path / "reg.yaml"
    reg.write_text(REGISTRY.replace("column: delta_ppl_pct}}\n- {source: s, quantity: fixed n5",
                                    "column: delta_pp}}\n- {source: s, quantity: fixed n5"))
    with pytest.raises(SwapKLError, match="no column 'delta_pp'"):
        build_scorecard(_tables(), reg)
    reg.write_text(REGISTRY.replace("unit: count,", "unit: counts,"))
    with pytest.raises(SwapKLError, match="unit 'counts' has no default tolerance"):
        load_registry(reg)


def _empty_tables():
    """Empty tables with the real schemas' columns (and the pair-set membership columns the registry uses); the
    tables without a schema constant take the columns their builders write."""
    agg = pd.DataFrame(columns=aggregate_schema(["in_adjacent", "in_within_3", "in_all"]).names)
    rope = counterfactual_table(pd.DataFrame([dict(kind="pair", model=m, revision="r", layer_i=0, layer_j=1, distance=1,
                                                   d_repl_max=1.0, d_inter=0.5, ratio_ir=0.5) for m in ("a", "b")]),
                                model_on="a", model_off="b", revision="r")
    return {"pruning": pd.DataFrame(columns=PRUNING_SCHEMA.names), "aggregate": with_directions(agg),
            "agreement": pd.DataFrame(columns=AGREEMENT_SCHEMA.names),
            "relevance_stats": pd.DataFrame(columns=RELEVANCE_STATS_COLUMNS),
            "rope_counterfactual": rope.iloc[:0], "recovery": pd.DataFrame(columns=list(RECOVERY_COLUMNS)),
            "domain_slices": pd.DataFrame(columns=[*DOMAIN_SLICE_KEYS, "kind", "model", "reference", "revision",
                                                   "delta_ppl_pct_reference", "delta_ppl_pct_slice", "n_configs",
                                                   "spearman"])}


def test_the_published_registry_on_a_run_of_no_paper_model():
    """The demo's case: no table holds a registry model, so every row is `not run`, naming what it needs; every
    spec's columns exist in the real schemas (checked while filtering)."""
    entries, _ = load_registry()
    assert len(entries) >= 100
    df = build_scorecard(_empty_tables())
    assert len(df) == len(entries)
    needs = df["status"].str.startswith("not run (needs ")
    assert (needs | df["status"].str.startswith("not run (no counterpart: ")).all()
    assert needs.sum() >= 100 and df["swapkl"].isna().all()
    assert set(df["model"]) >= {"Llama-3.1-8B-paper", "Qwen3-8B-paper", "pythia-1.4b-paper", "pythia-410m-paper"}
    brief = {0.035, 0.263, 0.034, 0.403, 13.54, 9.8, 25.0, 63.0, 18.0, 45.8, 110.5, 12.09, 10.2, 48.1, 0.21, 45.4,
             116.5, 8.31, 40.3, 39.1, 85.0, 84.7, 28.3, 57.2, 489.5, 764.7, 40.4, 142.1, 0.938, 0.536}
    assert brief <= set(df["published"].round(3))


def test_every_registry_row_names_an_entry_of_the_study_config():
    """A row whose model is no config entry can only ever say "not run (needs ...)" (issue 36: six scale-sweep
    rows named gpt2, opt-350m, ... where the config's entries are GPT-2-Small, OPT-350M, ...)."""
    import yaml

    entries, _ = load_registry()
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())["models"]
    assert [(e["model"], e["quantity"]) for e in entries if e["model"] not in config] == []


def test_no_published_number_is_both_computed_and_without_counterpart():
    """A number that one entry computes is not also listed as having no counterpart (issue 36: three Llama-3.1-8B
    rows of the second paper said "no counterpart" for the averages that the Meta-Llama-3-8B rows compute)."""
    entries, _ = load_registry()
    computed = {(e["source"].split(" (")[0], e["published"]) for e in entries
                if e.get("compute") and e["source"].startswith("Rethinking Layer Relevance")}
    idle = [e["quantity"] for e in entries if e.get("compute") is None
            and (e["source"].split(" (")[0], e["published"]) in computed]
    assert idle == []


def test_the_published_llama_table_reproduces_itself():
    """Synthetic Llama-3.1-8B-paper rows holding the published values: every skip_llama / 8b_core row of the
    registry is `reproduced`; the same rows 20% higher `differ` (ratios stay: both terms scale)."""
    entries, _ = load_registry()
    rows = []
    for e in entries:
        spec = e["compute"] or {}
        w = spec.get("where", {})
        if e["model"] == "Llama-3.1-8B-paper" and w.get("guide") == "fixed":
            rows.append(dict(model=e["model"], guide="fixed", fixed_set=w["fixed_set"], budget=w["budget"],
                             delta_ppl_pct=e["published"]))
    pruning = pd.DataFrame(rows).drop_duplicates(["fixed_set", "budget"])
    pruning = pd.concat([pruning, pd.DataFrame([dict(model="Llama-3.1-8B-paper", guide="base", budget=0, ppl=8.31)])])
    tables = dict(_empty_tables(), pruning=pruning.reindex(columns=PRUNING_SCHEMA.names))
    df = build_scorecard(tables)
    llama = df[(df["model"] == "Llama-3.1-8B-paper") & df["setting"].str.contains("pruning")]
    assert len(llama) == 18 + 2 and (llama["status"] == "reproduced").all(), llama[["quantity", "status"]]
    tables["pruning"] = tables["pruning"].assign(delta_ppl_pct=tables["pruning"]["delta_ppl_pct"] * 1.2)
    df = build_scorecard(tables)
    llama = df[(df["model"] == "Llama-3.1-8B-paper") & df["setting"].str.contains("pruning")]
    ratio = llama["quantity"].str.startswith("I/R")
    assert (llama.loc[~ratio & ~llama["quantity"].eq("baseline PPL"), "status"] == "differs").all()
    assert (llama.loc[ratio, "status"] == "reproduced").all()


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.cells = 0, 0

    def handle_starttag(self, tag, attrs):
        self.rows += tag == "tr"
        self.cells += tag in ("td", "th")


def test_the_html_table_renders_every_row():
    df = build_scorecard(_empty_tables())
    p = _Cells()
    p.feed(scorecard_html(df))
    assert p.rows == len(df) + 1 and p.cells == (len(df) + 1) * len(COLUMNS)


def _pruning_file(path: Path):
    cols = {name: [None] * 2 for name in PRUNING_SCHEMA.names}
    cols.update(model=["Qwen3-8B-paper"] * 2, revision=["main"] * 2, guide=["fixed", "fixed"],
                fixed_set=["paper-interchange-clustered", "paper-replacement"], budget=[3, 3], feasible=[True, True],
                delta_ppl_pct=[10.4, 60.0])
    write_parquet(pa.Table.from_pydict(cols, schema=PRUNING_SCHEMA), str(path), {"test": True})


def test_command_line_end_to_end(tmp_path):
    _pruning_file(tmp_path / "pruning.parquet")
    out, html = tmp_path / "card.parquet", tmp_path / "card.html"
    assert main(["scorecard", "--pruning", str(tmp_path / "pruning.parquet"), "--out", str(out),
                 "--html", str(html)]) == 0
    df = pd.read_parquet(out).set_index("quantity")
    assert df.loc["delta PPL %, interchange-clustered {15,17,20}", "status"] == "reproduced"
    assert df.loc["delta PPL %, replacement-guided {28,31,32}", "status"] == "differs"
    assert "Reproduction scorecard" in html.read_text()
    assert main(["scorecard", "--out", str(out), "--html", str(html)]) == 0  # its own outputs are replaced
    (tmp_path / "mine.html").write_text("<html>notes</html>")
    assert main(["scorecard", "--out", str(out), "--html", str(tmp_path / "mine.html")]) == 2
    assert (tmp_path / "mine.html").read_text() == "<html>notes</html>"


def test_a_missing_input_table_is_one_line_and_no_output(tmp_path, capsys):
    out = tmp_path / "card.parquet"
    assert main(["scorecard", "--pruning", str(tmp_path / "nope.parquet"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.parquet" in err[0]
    assert not out.exists()
