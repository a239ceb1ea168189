"""The one preamble of every workflow script: the job's log file, and SwapKLError as one line and exit code 2.

A workflow script (workflow/scripts/*.py) wraps its single call into swapkl in :func:`job_log`::

    with job_log(snakemake):
        aggregate(...)

Everything the job writes to stderr (logging, warnings, progress bars) goes to the rule's ``log:`` file.
An error of the user's input or environment (:class:`~swapkl.errors.SwapKLError`) ends the job with its
message as one line at the end of that log and exit code 2, without a traceback; any other exception is a
bug in swapkl and keeps its traceback. A job that requests a GPU (``resources: gpu``) fails the same way, in one
line, when torch sees no CUDA device, unless the config says ``device: cpu`` (:func:`check_job_device`): the GPU
rules do not fall back to the CPU unasked. This module imports neither snakemake nor torch (a GPU job imports
torch for that check).
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager

from swapkl.errors import SwapKLError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: exit code of a job that failed on bad input or an unusable environment (the CLI's code for the same)
EXIT_BAD_INPUT = 2


def error_line(err: SwapKLError) -> str:
    """The one line that reports a SwapKLError (its message with every newline and run of spaces collapsed)."""
    return "swapkl: error: " + " ".join(str(err).split())


#: the config's ``device`` values: ``auto`` (a GPU job needs a CUDA device) or ``cpu`` (run them on the CPU)
JOB_DEVICES = ("auto", "cpu")


def check_job_device(gpus: int, device: str, rule: str | None) -> None:
    """A job that requests ``gpus`` GPUs must see a CUDA device, unless ``device`` is ``cpu``, which hides the
    machine's GPUs from the job (set in the job's own process, before anything initialises CUDA, so that it holds
    wherever the job runs: locally or on a cluster node)."""
    if device not in JOB_DEVICES:
        raise SwapKLError(f"config device {device!r}: choose {' or '.join(JOB_DEVICES)}")
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        return
    if not gpus:
        return
    import torch  # only a GPU job gets here, and it runs torch anyway

    if torch.cuda.is_available():
        return
    build = "a CPU build" if torch.version.cuda is None else f"a CUDA {torch.version.cuda} build"
    raise SwapKLError(
        f"rule {rule or '?'} requests {gpus} GPU(s) but torch {torch.__version__} ({build}) sees no CUDA device: "
        "install the CUDA build (make setup TORCH=torch) or run the GPU rules on the CPU on purpose with "
        "`device: cpu` in the config (snakemake --config device=cpu)")


def _job_value(snakemake, attribute: str, key: str, default):
    """``snakemake.<attribute>[key]`` (the job's resources or config), or ``default`` where there is none."""
    holder = getattr(snakemake, attribute, None)
    return default if holder is None else holder.get(key, default)


@contextmanager
def job_log(snakemake):
    """Send stderr and logging to ``snakemake.log[0]``; check the device of a GPU job (:func:`check_job_device`);
    turn a SwapKLError into one line there and exit 2."""
    stream = open(snakemake.log[0], "w", buffering=1)
    sys.stderr = stream  # warnings, progress bars and tracebacks too
    logging.basicConfig(stream=stream, level=logging.INFO, format=LOG_FORMAT, force=True)
    try:
        check_job_device(_job_value(snakemake, "resources", "gpu", 0), _job_value(snakemake, "config", "device", "auto"),
                         getattr(snakemake, "rule", None))
        yield
    except SwapKLError as err:
        print(error_line(err), file=stream)
        stream.flush()
        sys.exit(EXIT_BAD_INPUT)
