"""The one preamble of every workflow script: the job's log file, and SwapKLError as one line and exit code 2.

A workflow script (workflow/scripts/*.py) wraps its single call into swapkl in :func:`job_log`::

    with job_log(snakemake):
        aggregate(...)

Everything the job writes to stderr (logging, warnings, progress bars) goes to the rule's ``log:`` file.
An error of the user's input or environment (:class:`~swapkl.errors.SwapKLError`) ends the job with its
message as one line at the end of that log and exit code 2, without a traceback; any other exception is a
bug in swapkl and keeps its traceback. This module imports neither snakemake nor torch.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager

from swapkl.errors import SwapKLError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: exit code of a job that failed on bad input or an unusable environment (the CLI's code for the same)
EXIT_BAD_INPUT = 2


def error_line(err: SwapKLError) -> str:
    """The one line that reports a SwapKLError (its message with every newline and run of spaces collapsed)."""
    return "swapkl: error: " + " ".join(str(err).split())


@contextmanager
def job_log(snakemake):
    """Send stderr and logging to ``snakemake.log[0]``; turn a SwapKLError into one line there and exit 2."""
    stream = open(snakemake.log[0], "w", buffering=1)
    sys.stderr = stream  # warnings, progress bars and tracebacks too
    logging.basicConfig(stream=stream, level=logging.INFO, format=LOG_FORMAT, force=True)
    try:
        yield
    except SwapKLError as err:
        print(error_line(err), file=stream)
        stream.flush()
        sys.exit(EXIT_BAD_INPUT)
