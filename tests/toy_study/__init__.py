"""A toy study, complete in one folder: this declaration, its job (``jobs.py``), its runner (``run.py``), its rules
(``rules.smk``), its config section's schema (``schema.yaml``), its table's caption (``toy_table.rst``) and its
figure (drawn by ``figures.py``, its caption ``toy_score.rst``). tests/test_study_folders.py drops the folder into
a copy of ``src/swapkl/studies/`` and finds the study in the config schema, the dry-run DAG, the report's tables and
figures, the command line's figures and docs/studies.md's table."""

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.study import Stage, Study, register_study
from swapkl.studies.toy_study.jobs import ToyJob


def _inputs(params, wildcards) -> dict:
    return {"checkpoint": params.checkpoint_input(wildcards)}


def _files(wildcards, output) -> dict:
    return {"out": output.scores}


STUDY = register_study(Study(
    name="toy_study", folder=Path(__file__).parent,
    stage=Stage("toy_study", ToyJob, "swapkl.studies.toy_study.run:run_toy", "toy_study", ("out",)),
    summary="a toy: one number per checkpoint, its scale times the number of blocks",
    outputs={"scores": "results/toy_study/{model}/{revision}.parquet"},
    tables={"toy_scores": "toy_table.rst"},
    rules={"score_toy": "checkpoint", "aggregate_toy": "once"},
    inputs=_inputs, files=_files,
    defaults=(("scale", ToyJob, "scale"),),
))

register(Figure("toy_score", "swapkl.studies.toy_study.figures:plot_toy_score", {"scores": STUDY.outputs["scores"]},
                "checkpoint", "scale", "a toy: one checkpoint's score", targets="toy_study",
                caption=str(STUDY.folder / "toy_score.rst")))
