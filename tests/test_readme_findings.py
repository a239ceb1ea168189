"""The README's real-model claims against the findings table of the run they describe (docs/real_findings.csv,
written by `benchmarks/real_study_numbers.py --findings` from that run; swapkl.studies.findings).

Each claim in the README's real-model section carries a tag ``<!-- finding: MODEL CLAIM VERDICT -->`` after the
sentence that states it. A claim stated as holding must hold at 95% in the table, one stated as undecided must be
undecided there: the test fails when the README states a comparison that the table does not support."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
TAG = re.compile(r"<!-- finding: (\S+) (\S+) (holds|undecided|same-blocks) -->")


def _section() -> str:
    text = (REPO / "README.md").read_text()
    return text.split("\n## Real trained models, offline\n", 1)[1].split("\n## ", 1)[0]


def test_every_tagged_claim_has_the_verdict_of_the_findings_table():
    table = pd.read_csv(REPO / "docs" / "real_findings.csv")
    verdicts = {(r.model, r.claim): r.verdict.replace(" ", "-") for r in table.itertuples()}
    tags = TAG.findall(_section())
    assert len(tags) >= 6, "the real-model section states its comparisons with tags"
    wrong = [(m, c, v, verdicts.get((m, c))) for m, c, v in tags if verdicts.get((m, c)) != v]
    assert not wrong, f"README claims that the findings table does not support: {wrong}"


def test_the_findings_section_has_no_untagged_comparison():
    """Every bullet of the section's findings lists carries a tag."""
    block = _section().split("**What holds at 95%", 1)[1].split("\n\n", 2)[-1]
    bullets = [b for b in re.split(r"\n(?=- )", _section().split("**What holds at 95%", 1)[1]) if b.startswith("- ")]
    assert bullets and block is not None
    untagged = [b.splitlines()[0] for b in bullets if not TAG.search(b)]
    assert not untagged, untagged
