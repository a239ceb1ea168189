"""Replay a finished Snakemake log through the whole run's progress line (swapkl.progress.DagProgress) and print,
after every finished job, the total it estimated against the run's true total: once with the jobs' kinds (those
that ask for a GPU, the others), once pooled over all jobs.

The weights are read from the log as the workflow's onstart handler reads them from the DAG: each job's `runtime`
resource where the log shows one (a job without one weighs the median of the others), its kind from `gpu=1` in
its resources line. Time is the log's own timestamps (whole seconds).

    python benchmarks/replay_progress.py .snakemake/log/<run>.snakemake.log [--every 4]
"""

from __future__ import annotations

import argparse
import datetime
import re

from swapkl.progress import DagProgress, duration

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def job_sizes(lines: list[str]) -> tuple[dict[int, float], dict[int, str]]:
    weights: dict[int, float | None] = {}
    kinds: dict[int, str] = {}
    job = None
    for raw in lines:
        line = raw.strip()
        m = re.match(r"^jobid: (\d+)$", line)
        if m:
            job = int(m.group(1))
            weights.setdefault(job, None)
            kinds.setdefault(job, "cpu")
        elif line.startswith("resources:") and job is not None:
            m = re.search(r"\bruntime=(\d+)", line)
            if m:
                weights[job] = float(m.group(1))
            if re.search(r"\bgpu=[1-9]", line):
                kinds[job] = "gpu"
    known = sorted(w for w in weights.values() if w)
    return {j: w or known[len(known) // 2] for j, w in weights.items()}, kinds


def replay(lines: list[str], weights: dict, kinds: dict | None) -> tuple[float, list[tuple[int, int, float, float]]]:
    """(the run's true total in seconds, [(jobs done, jobs, seconds elapsed, estimated total)] after each job)."""
    progress = DagProgress("unused", lambda text: None, clock=lambda: 0.0, weights=weights, kinds=kinds)
    progress.start, t0, now, out = 0.0, None, 0.0, []
    for raw in lines:
        m = STAMP.match(raw.strip())
        if m:
            stamp = datetime.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
            t0 = stamp if t0 is None else t0
            now = stamp - t0
            continue
        progress._read(raw.strip(), now)
        if raw.strip().startswith("Finished jobid") and progress.total and progress.done < progress.total:
            text = progress.line(now)
            if "at this pace" in text:
                out.append((progress.done, progress.total, now, now / progress._share_done(now)))
    return now, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="a finished run's Snakemake log (.snakemake/log/*.snakemake.log)")
    parser.add_argument("--every", type=int, default=4, help="print every Nth estimate (default 4)")
    args = parser.parse_args()
    with open(args.log, encoding="utf-8") as f:
        lines = f.read().splitlines()
    weights, kinds = job_sizes(lines)
    for name, given in (("by kind", kinds), ("pooled", None)):
        total, rows = replay(lines, weights, given)
        ratios = [estimate / total for *_, estimate in rows]
        span = f"{min(ratios):.2f}x to {max(ratios):.2f}x" if ratios else "no estimate"
        print(f"{name}: true total {duration(total)}; estimates {span} of it")
        for k, (done, jobs, elapsed, estimate) in enumerate(rows):
            if k % args.every == 0 or k == len(rows) - 1:
                print(f"  {done:4d}/{jobs} at {duration(elapsed):>9}: about {duration(estimate):>9} in all "
                      f"({estimate / total:.2f}x)")


if __name__ == "__main__":
    main()
