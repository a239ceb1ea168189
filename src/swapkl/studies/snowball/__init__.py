"""The snowball construction, as a study of the whole run in one folder: a hand-set 7-block LLaMA on a demo task
whose block 2 has the lowest block influence of all, yet removing it costs the most accuracy (docs/snowball.md).
The model is built, not trained: one CPU job (:func:`swapkl.relevance.snowball_table.run_snowball`, also the
command ``swapkl construct``) writes every block's BI and the accuracy without it.

Here: its declaration and settings (below), its rule (``rules.smk``), its top-level config section's schema
(``schema.yaml``) and its table's caption. Its figure is the folder's (``figures.py`` draws it, ``snowball.rst`` is
its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.layout import DEMO_DIR
from swapkl.study import Study, register_study


def snowball_task(cfg: dict) -> str | None:
    """The demo task file the construction is built on (rule build_demo_tasks writes it); None when it is off."""
    block = cfg["snowball"]
    return f"{DEMO_DIR}/tasks/{block['task']}.yaml" if block["enabled"] else None


def snowball_settings(cfg: dict) -> dict:
    """The construction's options: the section less its switch and task."""
    return {k: v for k, v in cfg["snowball"].items() if k not in ("enabled", "task")}


STUDY = register_study(Study(
    name="snowball", folder=Path(__file__).parent, stage=None, scope="run",
    summary="a hand-set 7-block LLaMA whose lowest-BI block is the one it cannot lose: every block's BI beside "
            "the task accuracy without it",
    tables={"snowball": "snowball_table.rst"},
    rules={"construct_snowball": "once"},
    figures="once",
))

register(Figure("snowball", "swapkl.studies.snowball.figures:plot_snowball",
                {"snowball": "results/snowball.parquet"}, "global", "relevance",
                "block influence per block of the snowball model beside its accuracy without the block",
                targets="snowball", caption=str(STUDY.folder / "snowball.rst")))
