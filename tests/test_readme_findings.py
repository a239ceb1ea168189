"""The real-model claims (docs/real_models.md, and the README's short section) against the tables of the run they
describe: the findings table (docs/real_findings.csv, `benchmarks/real_study_numbers.py --findings`;
swapkl.studies.findings), what to remove (docs/real_removal.csv) and the sequential probes' decisions
(docs/real_decisions.csv, `--decisions`).

Each claim carries a tag ``<!-- finding: MODEL CLAIM VERDICT -->`` after the sentence that states it. A claim
stated as holding must hold at 95% in the table, one stated as undecided must be undecided there: the test fails
when a page states a comparison that the table does not support."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
TAG = re.compile(r"<!-- finding: (\S+) (\S+) (holds|undecided|same-blocks) -->")


NAMES = {"smollm2-135m": "SmolLM2-135M", "gemma3-270m": "Gemma-3-270M"}


def _section() -> str:
    return (REPO / "docs" / "real_models.md").read_text()


def _readme_section() -> str:
    text = (REPO / "README.md").read_text()
    return text.split("\n## Real trained models, offline\n", 1)[1].split("\n## ", 1)[0]


def test_every_tagged_claim_has_the_verdict_of_the_findings_table():
    table = pd.read_csv(REPO / "docs" / "real_findings.csv")
    verdicts = {(r.model, r.claim): r.verdict.replace(" ", "-") for r in table.itertuples()}
    tags = TAG.findall(_section())
    assert len(tags) >= 6, "the real-model section states its comparisons with tags"
    wrong = [(m, c, v, verdicts.get((m, c))) for m, c, v in tags if verdicts.get((m, c)) != v]
    assert not wrong, f"README claims that the findings table does not support: {wrong}"


def test_the_findings_lists_have_no_untagged_comparison():
    """Every bullet of the "What holds" and "Undecided" lists carries at least one tag, and a list claims only its
    own verdict (a "holds" list has no undecided tag, and the other way round)."""
    section = _section()
    holds = section.split("**What holds at 95%.**", 1)[1].split("**Undecided at 95%.**", 1)[0]
    undecided = section.split("**Undecided at 95%.**", 1)[1].split("\n\n", 1)[0]
    for block, verdict in ((holds, "holds"), (undecided, "undecided")):
        bullets = [b for b in re.split(r"\n(?=- )", block) if b.startswith("- ")]
        assert bullets, verdict
        assert not [b.splitlines()[0] for b in bullets if not TAG.search(b)]
        assert {v for _, _, v in TAG.findall(block)} == {verdict}


def _pct(x: float) -> str:
    """A percentage as the README writes it: one decimal below 100, whole numbers with separators above."""
    return f"{x:+.1f}%" if abs(x) < 100 else f"{x:+,.0f}%"


def test_the_what_to_remove_table_is_the_runs():
    """Each row of the README's "What to remove" table is the row of docs/real_removal.csv, as printed."""
    table = pd.read_csv(REPO / "docs" / "real_removal.csv")
    want = {f"| {NAMES[r.model]} | {r.budget} | {r.removed.replace(',', ', ')} | {_pct(r.ppl_increase_pct)} "
            f"({_pct(r.ppl_increase_low)} to {_pct(r.ppl_increase_high)}) | {100 * r.stability:.0f}% |"
            for r in table.itertuples()}
    block = _section().split("**What to remove, and how sure that is**", 1)[1].split("\n\n", 2)[1]
    rows = {line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| model")}
    assert rows == want, sorted(rows ^ want)


def test_the_how_sure_table_is_the_sequential_probes_decisions():
    """Each row of the README's "How sure" table is a set decision of docs/real_decisions.csv (the sequential
    probes of that run), as printed: the blocks, how often window resamples pick them, the windows it took, and
    whether that holds at 95% or is undecided."""
    table = pd.read_csv(REPO / "docs" / "real_decisions.csv", dtype={"removed": str})
    want = {f"| {NAMES[r.model]} | {r.guide} | {r.budget} | {r.removed.replace(',', ', ')} | "
            f"{100 * r.stability:.0f}% | {r.windows} | {r.state} |" for r in table.itertuples()}
    block = _readme_section().split("**How sure.**", 1)[1].split("**Inside the block.**", 1)[0]
    rows = {line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| model")}
    assert rows == want, sorted(rows ^ want)


def test_the_gap_sign_counts_are_the_sequential_probes():
    """The README's and docs/real_models.md's account of the sequential gap signs (how many held, how many are
    positive, the negative pairs with their intervals, the windows the slowest took) is docs/real_decisions_signs.csv."""
    signs = pd.read_csv(REPO / "docs" / "real_decisions_signs.csv")
    held = signs[signs["state"] == "holds"]
    positive = int((held["answer"] == "+").sum())
    assert f"(all {len(signs)}; {positive} positive:" in _readme_section().replace("\n", " ")
    assert len(held) == len(signs)
    page = " ".join(_section().split())
    negative = held[held["answer"] == "-"]
    for r in negative.itertuples():
        assert f"{r.subject} ({r.estimate:.2f}, {r.low:.2f} to {r.high:.2f})" in page, r.subject  # all below 0
    slowest = held.groupby("model")["windows"].max()
    assert (f"the slowest took {slowest['smollm2-135m']} windows on SmolLM2 and {slowest['gemma3-270m']} on "
            "Gemma-3") in page
    assert f"All {len(signs)} adjacent pairs' signs hold" in page and f"{positive} of them positive" in page


def test_the_sequential_probes_savings_are_the_runs():
    """The evaluations the README, docs/real_models.md and docs/sequential.md quote for the sequential probes are
    docs/real_decisions_evaluations.csv (the windows each variant of the run's sequential probe took, against every
    variant on the cap), and each saving is their ratio."""
    cost = pd.read_csv(REPO / "docs" / "real_decisions_evaluations.csv").set_index("model")
    assert (cost["uniform"] == cost["variants"] * cost["cap"]).all()
    assert ((cost["uniform"] / cost["sequential"] - cost["saving"]).abs() < 1e-5).all()
    rows = {r.Index: r for r in cost.itertuples()}  # itertuples keeps each column's dtype
    smol, gemma = rows["smollm2-135m"], rows["gemma3-270m"]
    readme = " ".join(_readme_section().split())
    assert f"{smol.saving:.2f} and {gemma.saving:.2f} times fewer variant-window evaluations" in readme
    page = " ".join(_section().split())
    assert (f"SmolLM2's probe measured {smol.sequential:,} variant-windows where a uniform probe of its "
            f"{smol.variants} variants on {smol.cap} windows measures {smol.uniform:,} ({smol.saving:.2f} times "
            f"fewer); Gemma-3's {gemma.sequential:,} against {gemma.uniform:,} ({gemma.saving:.2f} times fewer)") in page
    table = (REPO / "docs" / "sequential.md").read_text()
    for name, r in (("SmolLM2-135M", smol), ("Gemma-3-270M", gemma)):
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} ("))
        assert f"{r.variants} variants) |" in row and f"| {r.sequential:,} | {r.uniform:,} | {r.saving:.2f}x |" in row, row

def test_the_windows_and_scored_tokens_quoted_are_the_runs():
    """Every count of windows and scored tokens that the README and docs/real_models.md quote for the real run is
    docs/real_scored.csv (`benchmarks/real_study_numbers.py --scored`): the uniform probe, the sequential pool,
    the sublayers study and the pruning perplexity; a count quoted "per model" is the same on both models."""
    table = pd.read_csv(REPO / "docs" / "real_scored.csv")

    def one(study: str) -> tuple[int, int, int]:
        rows = table[table["study"] == study]
        assert rows["windows"].nunique() == 1 and rows["scored_tokens"].nunique() == 1, study
        windows, tokens = int(rows["windows"].iloc[0]), int(rows["scored_tokens"].iloc[0])
        assert tokens % windows == 0, study  # filled windows: every position is scored
        return windows, tokens // windows, tokens

    readme = " ".join(_readme_section().split())
    page = " ".join(_section().split())
    w, t, n = one("probe")
    assert f"on {w} filled windows of {t} tokens ({n} scored tokens per model)" in page
    assert f"on the {w} filled windows ({n} scored tokens per model" in page
    w, t, _ = one("sequential_pool")
    assert f"up to {w} filled windows of {t} tokens per model" in readme
    assert f"a sequential probe on a pool of {w} filled windows of {t} tokens" in page
    w, t, n = one("sublayers")
    assert f"on {w} filled windows of {t} tokens per model ({n:,} scored tokens;" in readme
    assert f"on {w} filled windows of {t} tokens)" in page
    ppl = table[table["study"] == "pruning_perplexity"].set_index("model")["scored_tokens"]
    assert (f"perplexity increase (%) on {ppl['smollm2-135m']:,} (SmolLM2, unpruned perplexity 35.9) and "
            f"{ppl['gemma3-270m']:,} (Gemma-3, 288.8) held-out tokens") in page

def _share(x: float) -> str:
    return f"{100 * x:.0f}%"


def _num(x: float) -> str:
    return f"{x:+.3f}"


def _points(x: float) -> str:
    return f"{x:+,.1f}"


def test_the_inside_the_block_tables_are_the_runs():
    """The README's "Inside the block" tables are docs/real_sublayers.csv (`benchmarks/real_study_numbers.py
    --sublayers`, swapkl.figures.sublayer_statements) as printed, and each verdict is the one its interval gives:
    a direction only where the 95% interval excludes 0, "undecided" otherwise."""
    from swapkl.figures.sublayer_statements import sign_verdict

    table = pd.read_csv(REPO / "docs" / "real_sublayers.csv")
    rows = {(r.model, r.claim): r for r in table.itertuples()}
    for r in table.itertuples():
        if r.claim == "mlp_minus_attention":
            assert r.verdict == sign_verdict(r.low, r.high, "mlp", "attention")
        elif r.claim == "mean_interaction":
            assert r.verdict == sign_verdict(r.low, r.high, "nonzero", "nonzero")
        elif "@" in r.claim:
            assert r.verdict == sign_verdict(r.low, r.high, "blocks cheaper", "sublayer cheaper")
    models = list(dict.fromkeys(table["model"]))

    def cell(model, claim, fmt):
        r = rows[(model, claim)]
        return f"{fmt(r.estimate)} ({fmt(r.low)} to {fmt(r.high)})"

    want = {f"| {NAMES[m]} | {cell(m, 'share:attention', _share)} | {cell(m, 'share:mlp', _share)} | "
            f"{cell(m, 'mlp_minus_attention', _num)} | {rows[(m, 'mlp_minus_attention')].verdict} | "
            f"{cell(m, 'mean_interaction', _num)} |" for m in models}
    block = _readme_section().split("**Inside the block.**", 1)[1]
    first, second = block.split("\n\n")[1], block.split("\n\n")[3]
    got = {line for line in first.splitlines() if line.startswith("| ") and not line.startswith("| model")}
    assert got == want, sorted(got ^ want)
    pruning = table[table["claim"].str.startswith("sublayer_deletion-interchange@")]
    want = {f"| {NAMES[r.model]} | {r.claim.rsplit('@', 1)[1]} | {_points(r.estimate)} ({_points(r.low)} to "
            f"{_points(r.high)}) | {r.verdict} |" for r in pruning.itertuples()}
    got = {line for line in second.splitlines() if line.startswith("| ") and not line.startswith("| model")}
    assert got == want, sorted(got ^ want)
