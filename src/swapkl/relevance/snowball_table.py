"""The snowball construction as a worked example: one table row per block of the built model, with its block
influence (cosine), the model's accuracy without it and its AccRel, so that a reader sees the block that
cosine calls the most removable is the one the model cannot lose (:mod:`swapkl.relevance.construct`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.relevance.construct import CRITICAL, build_snowball, choice_accuracy, task_requests_tensor
from swapkl.relevance.tasks import acc_rel, first_docs, load_task
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import SNOWBALL_SCHEMA


def snowball_rows(snow, task) -> list[dict]:
    """Per block of ``snow`` (a :class:`~swapkl.relevance.construct.Snowball` built on ``task``): its BI, its
    rank by BI (1 = lowest, the block BI-guided pruning removes first), the accuracy of the stock forward
    without it and its AccRel."""
    req = task_requests_tensor(task, snow.tokenizer)
    gold = np.array([d.gold for d in task.docs])
    ranks = np.argsort(np.argsort(snow.bi, kind="stable"), kind="stable") + 1
    rows = []
    for block, bi in enumerate(snow.bi):
        without = choice_accuracy(snow.model, req, len(task.docs), gold, (block,))
        rows.append(dict(block=block, bi=float(bi), bi_rank=int(ranks[block]), critical=block == CRITICAL,
                         accuracy=snow.accuracy, accuracy_without_block=without,
                         acc_rel=acc_rel(without, snow.accuracy, task.random_baseline), eps=snow.eps,
                         task=task.name, n_docs=len(task.docs), random_baseline=task.random_baseline))
    return rows


def run_snowball(task_file: str, out: str, *, eps: float, max_docs: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Build the snowball model on the first ``max_docs`` documents of the task in ``task_file`` (refused if
    it fails its own check: BI of the critical block ``eps`` and lowest, accuracy 1 with it and 0 without)
    and write its per-block table to ``out`` (Parquet, with the construction's numbers as provenance)."""
    check_writable(out)
    task = first_docs(load_task(task_file), max_docs)
    snow = build_snowball(task, eps, seed=seed)
    table = pa.Table.from_pylist(snowball_rows(snow, task), schema=SNOWBALL_SCHEMA)
    prov = provenance.build(task_sha256=provenance.input_sha256([task.yaml_path, task.data_path]), eps=eps,
                            max_docs=max_docs, seed=seed, construction=snow.manifest(task))
    write_parquet(table, out, prov)
    return table.to_pandas()
