"""The toy study's runner: the checkpoint's number of blocks times the scale, as a one-row table."""

import json
from pathlib import Path

import pandas as pd


def run_toy(job) -> None:
    config = json.loads((Path(job.model) / "config.json").read_text())
    pd.DataFrame({"blocks": [config["num_hidden_layers"]], "score": [job.scale * config["num_hidden_layers"]]}
                 ).to_parquet(job.out)
