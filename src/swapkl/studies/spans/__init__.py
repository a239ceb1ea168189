"""Middle-span experiments after "Transformer Layers as Painters", as a study in one folder: on every symmetric
middle span [s, L-s) of a checkpoint, the blocks skipped, reversed, shuffled, replaced by the middle block repeated,
or run in parallel (looped), each measured by KL against the base model on the probe windows (docs/spans.md).

Here: its declaration (below), its job (``jobs.py``), its measurement (``run.py``: torch), the gathered table with
its intervals and the adjacent interchange and replacement references (``stats.py``), its rules (``rules.smk``),
its config section's schema (``schema.yaml``) and its table's caption. Its figure is the family
:mod:`swapkl.figures.spans`, outside the folder for the reason the sublayers study gives.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.studies.spans.jobs import SpansJob
from swapkl.study import Stage, Study, probe_window_inputs, register_study, row_labels


def _files(wildcards, output) -> dict:
    return {"out": output.spans}


STUDY = register_study(Study(
    name="spans", folder=Path(__file__).parent,
    stage=Stage("spans", SpansJob, "swapkl.studies.spans.run:run_spans", "spans", ("out",), row_labels),
    summary="skip, reverse, shuffle, repeat and (looped) parallel runs of every symmetric middle span, each by "
            "KL against the base, beside the adjacent interchange and replacement KL",
    outputs={"spans": "results/spans/{model}/{revision}.parquet"},
    tables={"spans": "spans_table.rst"},
    rules={"probe_spans": "checkpoint", "aggregate_spans": "once"},
    inputs=probe_window_inputs, files=_files,
    defaults=tuple((key, SpansJob, key) for key in ("variants", "loops", "seed", "min_start", "min_width")),
))
