#!/bin/sh
# Snakemake runs this once after creating the conda environment, from the directory it was started in
# (the repository root): install swapkl from this checkout, editable, without touching the pinned packages.
set -e
python -m pip install --no-deps --editable .
