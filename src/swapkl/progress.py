"""Progress of a long loop: a tqdm bar on a terminal, progress lines in a log.

tqdm draws nothing when stderr is not a terminal (a Snakemake job log, SLURM output, ``2> file``), so a long job
would leave an empty log. :class:`Progress` (and :func:`track` over an iterable) gives a bar on a terminal and,
off one, writes a line to stderr about every :data:`EVERY_S` seconds or every :data:`EVERY_FRACTION` of the
total, whichever comes first, but never within :data:`MIN_S` seconds of the last one (or of the start: a run
shorter than that prints nothing, so a command that fails at once still ends in its one error line), and one
at the end when it printed any::

    probe pythia-410m@step0: 120/1000 variants (12%), 3m05s elapsed, ETA 22m40s

The ETA divides the time so far by the items computed so far (items taken over from a resumed run, counted
with :meth:`Progress.skip`, count as done but not in the rate). :class:`DagProgress` does the same for a whole
Snakemake run, from Snakemake's own log: the workflow follows it (:func:`follow_dag`) from its start. This module
imports neither torch nor tqdm at module level, nor snakemake at all.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator

#: off a terminal, a line at least this often (seconds) ...
EVERY_S = 30.0
#: ... and whenever another this much of the total is done ...
EVERY_FRACTION = 0.05
#: ... but not within this many seconds of the last line (or of the start)
MIN_S = 5.0


def duration(seconds: float) -> str:
    """``12s``, ``3m05s``, ``1h02m03s``."""
    s = int(round(seconds))
    h, m, s = s // 3600, s // 60 % 60, s % 60
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Counts ``total`` items; ``update(n)`` after computing ``n``, ``skip(n)`` for ``n`` taken over, ``close()``.

    ``quiet``: count, show nothing. ``stream`` (default: ``sys.stderr`` when the bar is made), ``tty`` (default:
    whether that stream is a terminal) and ``clock`` (seconds, default :func:`time.monotonic`) are there for
    the tests."""

    def __init__(self, total: int, desc: str, unit: str, *, quiet: bool = False, stream=None,
                 tty: bool | None = None, clock: Callable[[], float] = time.monotonic):
        self.total, self.desc, self.unit, self.quiet = int(total), desc, unit, quiet
        self.note = ""
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.clock = clock
        self.done = self.skipped = 0
        self.start = self.last_line = clock()
        self.last_step = 0  # the EVERY_FRACTION steps of the total reached at the last line
        self.last_done = 0  # the count the last line showed (0: no line yet)
        self.closed = False
        self.bar = None
        if self.tty and not quiet:
            from tqdm.auto import tqdm  # a terminal only

            self.bar = tqdm(total=self.total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True)

    def skip(self, n: int) -> None:
        """``n`` items taken over (a resumed run): done, but not part of the rate."""
        self.skipped += n
        self.update(n)

    def set_note(self, note: str) -> None:
        """A short note shown after the count (e.g. the last loss), in the bar and the lines."""
        self.note = note
        if self.bar is not None:
            self.bar.set_postfix_str(note, refresh=False)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        if self.quiet:
            return
        now = self.clock()
        since = now - self.last_line
        if since >= EVERY_S or (since >= MIN_S and self._step() > self.last_step):
            self._line(now)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.bar is not None:
            self.bar.close()
        elif self.last_done and self.done != self.last_done and not self.quiet:
            self._line(self.clock())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _step(self) -> int:
        return math.floor(self.done / self.total / EVERY_FRACTION) if self.total else 0

    def line(self, now: float) -> str:
        """The progress line at time ``now``."""
        elapsed = now - self.start
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        note = f", {self.note}" if self.note else ""
        text = f"{self.desc}: {self.done}/{self.total} {self.unit}s{share}{note}, {duration(elapsed)} elapsed"
        computed = self.done - self.skipped
        left = self.total - self.done
        if left <= 0:
            return text + ", done"
        if computed > 0:
            return text + f", ETA {duration(elapsed / computed * left)}"
        return text

    def _line(self, now: float) -> None:
        print(self.line(now), file=self.stream, flush=True)
        self.last_line, self.last_step, self.last_done = now, self._step(), self.done


def track(items: Iterable, desc: str | None, unit: str, *, total: int | None = None, **options) -> Iterator:
    """Yield ``items``, counting each one done after the loop body that follows it has run (``desc`` None:
    quietly)."""
    items = list(items) if total is None and not hasattr(items, "__len__") else items
    with Progress(len(items) if total is None else total, desc or "", unit, quiet=desc is None, **options) as bar:
        for item in items:
            yield item
            bar.update(1)


#: Snakemake's lines after each finished job (its log file and its console)
DAG_STEPS = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
DAG_FINISHED = re.compile(r"^Finished jobid: (\d+)\b(?: \(Rule: (\S+)\))?")
#: a job's start: its rule's line, then its id a few lines below
DAG_RULE = re.compile(r"^(?:local)?rule (\S+):$")
DAG_JOBID = re.compile(r"^jobid: (\d+)$")
#: a line of the whole run at most this often while jobs finish, and at least this often while one runs long
DAG_EVERY_S, DAG_QUIET_S = 30.0, 120.0


class DagProgress:
    """The whole run's progress from Snakemake's log file (``path``): after jobs finish, and every
    :data:`DAG_QUIET_S` seconds while one runs long, a line with the time elapsed, the jobs done and the total time
    the run takes if the jobs left go at the pace of those done::

        swapkl: 40 of 123 jobs done, 3m10s elapsed; at this pace about 9m45s in all (ETA 6m35s)

    Jobs differ (a probe takes minutes, a table seconds): ``weights`` ({Snakemake job id: expected duration}, the
    jobs' ``runtime`` resources) makes the pace that of the work done, the weights of the finished jobs against
    those of all; without it every job weighs the same. A ``runtime`` is a cluster's time limit, not a measured
    duration (the demo's training declares an hour and takes a minute), so the weights are corrected by what the
    run sees: a finished job weighs the seconds it took (from its start line to its end line), a job of a rule
    (``rules``: {job id: rule name}) of which jobs have finished the median of their seconds, any other job its
    ``runtime`` times the median ratio of seconds taken to ``runtime`` over the finished jobs of its kind
    (``kinds``: {job id: kind}; the workflow's kinds are ``gpu``, a job that loads a model, and ``cpu``), or over
    all finished jobs where no kinds are given; a running job counts as done for the seconds it has run, up to its
    weight. A runtime says little of how long a job takes (in make real a figure and a probe both declare about
    half an hour; one takes 3 s, the other 7 minutes), so with kinds given no estimate is made until a job of
    each kind still to run has finished. The estimate firms up as the run goes, none is given before a twentieth
    of the work (and 3 jobs) is done, and it assumes the machine stays as busy as it was. ``emit`` takes each
    line (default: stderr); ``clock`` is there for the tests."""

    def __init__(self, path: str, emit: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, weights: dict[int, float] | None = None,
                 rules: dict[int, str] | None = None, kinds: dict[int, str] | None = None):
        self.path, self.clock = path, clock
        self.emit = emit or (lambda text: print(text, file=sys.stderr, flush=True))
        self.start = self.last_line = clock()
        self.offset = 0
        self.done, self.total, self.shown = 0, 0, 0
        self.weights = {int(k): float(v) for k, v in (weights or {}).items() if v and float(v) > 0}
        self.rules = {int(k): str(v) for k, v in (rules or {}).items()}
        self.kinds = {int(k): str(v) for k, v in (kinds or {}).items()}
        self.finished: set[int] = set()
        self.started: dict[int, float] = {}  # job id -> clock when its start was read
        self.took: dict[int, float] = {}  # job id -> seconds from its start line to its end line
        self._rule: str | None = None  # the rule of the job whose start is being read

    def poll(self) -> str | None:
        """Read what the log gained; the line to show now, if any (also given to ``emit``)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return None
        data = data[:data.rfind(b"\n") + 1]  # whole lines only: a line still being written is read next time
        self.offset += len(data)
        now = self.clock()
        for raw in data.decode("utf-8", errors="replace").splitlines():
            self._read(raw.strip(), now)
        since = now - self.last_line
        if not self.total or not ((self.done != self.shown and since >= DAG_EVERY_S) or since >= DAG_QUIET_S):
            return None
        line = self.line(now)
        self.last_line, self.shown = now, self.done
        self.emit(line)
        return line

    def _read(self, line: str, now: float) -> None:
        m = DAG_STEPS.match(line)
        if m:
            self.done, self.total = int(m.group(1)), int(m.group(2))
        m = DAG_RULE.match(line)
        if m:
            self._rule = m.group(1)
        m = DAG_JOBID.match(line)
        if m and self._rule:
            job = int(m.group(1))
            self.started[job] = now
            self.rules.setdefault(job, self._rule)
            self._rule = None
        m = DAG_FINISHED.match(line)
        if m:
            job = int(m.group(1))
            self.finished.add(job)
            if m.group(2):
                self.rules.setdefault(job, m.group(2))
            if job in self.started:
                self.took[job] = now - self.started[job]

    def line(self, now: float) -> str:
        elapsed = now - self.start
        text = f"swapkl: {self.done} of {self.total} jobs done, {duration(elapsed)} elapsed"
        if self.done >= self.total:
            return text
        share = self._share_done(now)
        if self.done < 3 or share < 0.05 or self._kind_unseen():  # the first jobs (texts, tokenizers) say little
            return text + "; too few jobs done for an estimate yet"
        expected = elapsed / share
        return text + f"; at this pace about {duration(expected)} in all (ETA {duration(expected - elapsed)})"

    def _share_done(self, now: float) -> float:
        """The share of the run's work done: by the jobs' weights where every finished job has one, else by count."""
        if self.weights and self.finished and self.finished <= set(self.weights):
            work = self.expected()
            done = sum(work[j] for j in self.finished)
            if any(j in self.took for j in self.finished):  # the weights are seconds: running jobs count too
                done += sum(min(now - t, work[j]) for j, t in self.started.items()
                            if j in work and j not in self.finished)
            return done / sum(work.values())
        return self.done / self.total if self.total else 0.0

    def _kind_unseen(self) -> bool:
        """Whether a kind of job still to run has no finished job whose duration is known (with kinds given)."""
        if not self.kinds:
            return False
        seen = {self.kinds.get(j) for j in self.finished if j in self.took}
        return any(self.kinds.get(j) not in seen for j in self.weights if j not in self.finished)

    def expected(self) -> dict[int, float]:
        """Each job's weight, corrected by the durations seen so far (the class docstring says how): seconds once a
        finished job's duration is known, the ``runtime`` weights as given before."""
        seen = [j for j in self.finished if j in self.took and j in self.weights]
        taken = sum(self.took[j] for j in seen)
        if taken <= 0:
            return dict(self.weights)
        ratio = taken / sum(self.weights[j] for j in seen)
        by_rule: dict[str, list[float]] = {}
        by_kind: dict[str, list[float]] = {}
        for j in seen:
            by_rule.setdefault(self.rules.get(j, ""), []).append(self.took[j])
            if j in self.kinds:
                by_kind.setdefault(self.kinds[j], []).append(self.took[j] / self.weights[j])
        out = {}
        for j, w in self.weights.items():
            rule = self.rules.get(j)
            if j in seen:
                out[j] = self.took[j]
            elif rule in by_rule:
                out[j] = statistics.median(by_rule[rule])
            elif self.kinds.get(j) in by_kind:
                out[j] = w * statistics.median(by_kind[self.kinds[j]])
            else:
                out[j] = w * ratio
        return out


def follow_dag(log, emit: Callable[[str], None] | None = None, *, weights: dict[int, float] | None = None,
               rules: dict[int, str] | None = None, kinds: dict[int, str] | None = None,
               interval: float = 5.0) -> threading.Thread | None:
    """Follow Snakemake's log file in a daemon thread (:class:`DagProgress`, polled every ``interval`` seconds) for
    as long as the process runs; the workflow starts it in its ``onstart`` handler, whose ``log`` is the list of
    the run's log files (Snakemake 9; a path is taken too), with the ``weights``, ``rules`` and ``kinds`` of the
    jobs it will run. None, and no thread, where the run keeps no log file."""
    paths = [log] if isinstance(log, (str, os.PathLike)) else [str(p) for p in (log or ())]
    if not paths:
        return None
    progress = DagProgress(str(paths[0]), emit, weights=weights, rules=rules, kinds=kinds)

    def run() -> None:
        while True:
            time.sleep(interval)
            try:
                progress.poll()
            except Exception as e:  # the run goes on; say once why its progress lines stop
                progress.emit(f"swapkl: no more progress lines for this run ({type(e).__name__}: {e})")
                return

    thread = threading.Thread(target=run, name="swapkl-dag-progress", daemon=True)
    thread.start()
    return thread
