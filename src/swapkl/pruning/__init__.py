"""Pruning a checkpoint: its inputs, the output table and the statistics drawn from it.

The run itself is :func:`swapkl.pruning.prune.run_pruning`; the selection rules are the guides of
:mod:`swapkl.pruning.guides`.
"""
