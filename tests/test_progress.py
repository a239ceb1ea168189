"""Progress off a terminal (swapkl.progress): a line about every 30 s or 5%, with done/total and the ETA, on a
fake clock; and the sweep of the engine writes such lines into a job's log."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from swapkl.progress import EVERY_FRACTION, EVERY_S, MIN_S, Progress, duration, track


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_durations():
    assert [duration(s) for s in (0, 12.4, 65, 3723)] == ["0s", "12s", "1m05s", "1h02m03s"]


def test_a_line_every_30_seconds_with_the_eta():
    """1000 items at 1 s each: no 5% step (50 items) is reached within 30 s, so the clock decides."""
    clock, out = Clock(), io.StringIO()
    bar = Progress(1000, "probe m@step0", "variant", stream=out, tty=False, clock=clock)
    for k in range(1, 46):
        clock.now += 1.0
        bar.update(1)
        if k == 29:
            assert lines(out) == []  # nothing before 30 s
    assert lines(out) == ["probe m@step0: 30/1000 variants (3%), 30s elapsed, ETA 16m10s"]  # 970 left at 1 s each
    for _ in range(5):  # the 5% step at 50 items comes before the next 30 s
        clock.now += 1.0
        bar.update(1)
    assert lines(out)[-1] == "probe m@step0: 50/1000 variants (5%), 50s elapsed, ETA 15m50s"
    assert len(lines(out)) == 2


def test_a_line_every_5_percent_when_that_comes_first():
    """200 items at 1 s each: 5% (10 items) takes 10 s, less than 30 s, so a line per 5% step."""
    clock, out = Clock(), io.StringIO()
    bar = Progress(200, "train", "step", stream=out, tty=False, clock=clock)
    for _ in range(200):
        clock.now += 1.0
        bar.update(1)
    bar.close()
    got = lines(out)
    assert len(got) == round(1 / EVERY_FRACTION)  # the last at 100%; closing adds no second one
    assert got[0] == "train: 10/200 steps (5%), 10s elapsed, ETA 3m10s"
    assert got[-1] == "train: 200/200 steps (100%), 3m20s elapsed, done"


def test_no_line_within_5_seconds_so_a_quick_run_prints_nothing():
    clock, out = Clock(), io.StringIO()
    bar = Progress(200, "quick", "step", stream=out, tty=False, clock=clock)
    for _ in range(200):  # 0.125 s each (exact in binary): every 5% step comes within 1.25 s
        clock.now += 0.125
        bar.update(1)
    # a line at the first 5% step at least MIN_S = 5 s after the last line: items 40, 80, 120, 160, 200
    assert [line.split(":")[1].split(" ")[1] for line in lines(out)] == ["40/200", "80/200", "120/200", "160/200",
                                                                       "200/200"]
    short = io.StringIO()
    with Progress(5, "fails", "variant", stream=short, tty=False, clock=clock) as bar:
        for _ in range(4):
            bar.update(1)  # at once, then an error: nothing printed, the error line stays alone
    assert short.getvalue() == ""


def test_items_taken_over_count_as_done_but_not_in_the_rate():
    """A resumed run: 500 of 1000 items taken over at once, then 10 s per item; the ETA is 10 s per item left."""
    clock, out = Clock(), io.StringIO()
    bar = Progress(1000, "probe", "variant", stream=out, tty=False, clock=clock)
    bar.skip(500)
    assert lines(out) == []  # within 5 s of the start
    for _ in range(4):
        clock.now += 10.0
        bar.update(1)
    # the 50% step at 10 s, then the 30 s clock at 40 s: 10 s per computed item, the 500 taken over left out
    assert lines(out) == ["probe: 501/1000 variants (50%), 10s elapsed, ETA 1h23m10s",
                          "probe: 504/1000 variants (50%), 40s elapsed, ETA 1h22m40s"]
    assert bar.line(clock.now + 0.0).endswith("ETA 1h22m40s")
    nothing = Progress(10, "resumed", "variant", stream=io.StringIO(), tty=False, clock=clock)
    clock.now += 6.0
    nothing.skip(10)
    assert nothing.line(clock.now) == "resumed: 10/10 variants (100%), 6s elapsed, done"
    fresh = Progress(10, "fresh", "variant", stream=io.StringIO(), tty=False, clock=clock)
    fresh.skip(3)
    assert fresh.line(clock.now) == "fresh: 3/10 variants (30%), 0s elapsed"  # nothing computed yet: no ETA


def test_note_quiet_and_terminal():
    clock, out = Clock(), io.StringIO()
    bar = Progress(4, "train", "step", stream=out, tty=False, clock=clock)
    bar.set_note("loss 2.345")
    clock.now += EVERY_S
    bar.update(1)
    assert lines(out) == ["train: 1/4 steps (25%), loss 2.345, 30s elapsed, ETA 1m30s"]
    quiet = io.StringIO()
    with Progress(4, "x", "step", stream=quiet, tty=False, clock=clock, quiet=True) as q:
        q.update(4)
    assert quiet.getvalue() == ""
    bar_out = io.StringIO()
    with Progress(3, "tty", "step", stream=bar_out, tty=True, clock=clock) as bar:
        bar.update(3)
    assert "3/3" in bar_out.getvalue() and "elapsed" not in bar_out.getvalue()  # tqdm's bar, not the lines


def test_track_counts_each_item_after_its_loop_body():
    clock, out = Clock(), io.StringIO()
    seen = []
    for item in track(range(3), "blocks", "block", stream=out, tty=False, clock=clock):
        clock.now += EVERY_S
        seen.append(item)
    assert seen == [0, 1, 2]
    assert lines(out)[0] == "blocks: 1/3 blocks (33%), 30s elapsed, ETA 1m00s"
    assert lines(out)[-1] == "blocks: 3/3 blocks (100%), 1m30s elapsed, done"


def test_the_engine_sweep_writes_progress_lines_off_a_terminal(capsys, monkeypatch):
    """Off a terminal the probe's sweep used to print nothing (tqdm disables itself there). (No wait between
    lines here: the tiny sweep takes well under the 5 s that keep a quick run silent.)"""
    torch = pytest.importorskip("torch")
    import swapkl.progress

    monkeypatch.setattr(swapkl.progress, "MIN_S", 0.0)
    from swapkl.model.batch_loop import sweep, window_batches
    from swapkl.model.engine import ProbeEngine
    from swapkl.probes.protocols import build_variants
    from tiny_models import random_tokens, tiny_model

    engine = ProbeEngine(tiny_model("gpt_neox", n_layers=3, vocab=50))
    ids = random_tokens(50, 4, 8, seed=0)
    variants = build_variants(["interchange"], "adjacent", 3)
    batches = window_batches(ids.numpy(), torch.ones_like(ids).numpy(), 2)
    n = sum(1 for _ in sweep(engine, batches, variants, device="cpu", desc="probe toy"))
    assert n == 2 * (len(variants) + 1)
    err = capsys.readouterr().err.splitlines()  # pytest's captured stderr is no terminal
    assert err and err[-1].startswith(f"probe toy: {n}/{n} model runs (100%), ") and err[-1].endswith(", done")


def test_the_whole_run_s_line_from_snakemake_s_log(tmp_path):
    """DagProgress reads Snakemake's "N of M steps" lines as they come: no line within 30 s of the last, then the
    elapsed time and the total at the pace of the jobs done (elapsed * M / N); a line every 2 minutes while a long
    job runs; nothing but the count once every job is done."""
    from swapkl.progress import DagProgress

    log = tmp_path / "snakemake.log"
    log.write_text("Building DAG of jobs...\n")
    clock = Clock()
    clock.now = 0.0
    got: list[str] = []
    dag = DagProgress(str(log), got.append, clock=clock)
    assert dag.poll() is None and dag.offset > 0  # no job done yet
    with log.open("a") as f:
        f.write("1 of 40 steps (2%) done\n")
    clock.now = 31.0
    assert dag.poll() == "swapkl: 1 of 40 jobs done, 31s elapsed; too few jobs done for an estimate yet"
    with log.open("a") as f:
        f.write("[Sun Dec  6 10:00:00 2026]\nFinished jobid: 3 (Rule: probe)\n10 of 40 steps (25%) done\n")
    clock.now = 45.0
    assert dag.poll() is None  # within 30 s of the last line
    clock.now = 61.0
    assert dag.poll() == "swapkl: 10 of 40 jobs done, 1m01s elapsed; at this pace about 4m04s in all (ETA 3m03s)"
    clock.now = 100.0
    assert dag.poll() is None  # nothing new, and not yet 2 minutes
    clock.now = 181.0
    assert dag.poll() == "swapkl: 10 of 40 jobs done, 3m01s elapsed; at this pace about 12m04s in all (ETA 9m03s)"
    with log.open("a") as f:
        f.write("40 of 40 steps (100%) done\n")
    clock.now = 240.0
    assert dag.poll() == "swapkl: 40 of 40 jobs done, 4m00s elapsed"
    assert got == [line for line in got if line.startswith("swapkl: ")] and len(got) == 4


def test_the_workflow_follows_its_run_from_its_start():
    """The Snakefile's onstart handler starts the follower on Snakemake's log file, through Snakemake's logger."""
    snakefile = (Path(__file__).resolve().parents[1] / "Snakefile").read_text()
    handler = snakefile.split("onstart:\n", 1)[1].split("\n\n", 1)[0]
    assert "follow_dag(log, logger.info, **job_estimates(workflow.dag))" in handler


def test_the_follower_takes_snakemake_s_list_of_log_files(tmp_path):
    """Snakemake 9 hands onstart its log files as a list: the follower follows the first, and starts nothing
    without one."""
    import time

    from swapkl.progress import follow_dag

    log = tmp_path / "run.log"
    log.write_text("1 of 2 steps (50%) done\n")
    got: list[str] = []
    assert follow_dag([], got.append) is None and follow_dag(None, got.append) is None
    thread = follow_dag([str(log)], got.append, interval=0.01)
    assert thread is not None and thread.daemon
    time.sleep(0.2)
    assert thread.is_alive()  # it read the file without failing, and waits for the 30 s of its first line


def test_the_pace_is_that_of_the_work_done_where_jobs_have_weights(tmp_path):
    """Three 1-minute table jobs and one 60-minute probe: with two tables done after 31 s the work done is 2 of 63
    minutes, too little for an estimate; with the probe done too after 31 minutes it is 62 of 63, so about 31.5
    minutes in all, where the count alone (3 of 4 jobs) would say 41m20s. A weight of 0 is not a weight."""
    from swapkl.progress import DagProgress

    log = tmp_path / "snakemake.log"
    log.write_text("")
    clock = Clock()
    clock.now = 0.0
    dag = DagProgress(str(log), lambda line: None, clock=clock, weights={1: 1.0, 2: 1.0, 3: 60.0, 4: 1.0, 5: 0})
    assert 5 not in dag.weights
    with log.open("a") as f:
        f.write("Finished jobid: 1 (Rule: stamp)\n1 of 4 steps (25%) done\n"
                "Finished jobid: 2 (Rule: table)\n2 of 4 steps (50%) done\n")
    clock.now = 31.0
    assert dag.poll().endswith("too few jobs done for an estimate yet")
    with log.open("a") as f:
        f.write("Finished jobid: 3 (Rule: probe)\n3 of 4 steps (75%) done\n")
    clock.now = 31 * 60.0
    assert dag.poll() == ("swapkl: 3 of 4 jobs done, 31m00s elapsed; at this pace about 31m30s in all "
                          "(ETA 30s)")
    unweighted = DagProgress(str(log), lambda line: None, clock=lambda: 31 * 60.0)
    unweighted.start = 0.0
    unweighted.poll()
    assert "about 41m20s in all" in unweighted.line(31 * 60.0)  # by count: 3 of 4 jobs


def test_a_line_still_being_written_is_read_when_it_is_whole(tmp_path):
    """Snakemake may be writing "Finished jobid: 12" when the follower reads "Finished jobid: 1": only whole lines
    count."""
    from swapkl.progress import DagProgress

    log = tmp_path / "snakemake.log"
    log.write_bytes(b"1 of 4 steps (25%) done\nFinished jobid: 1")
    dag = DagProgress(str(log), lambda line: None, clock=lambda: 0.0, weights={12: 1.0, 1: 1.0})
    dag.poll()
    assert dag.finished == set() and dag.done == 1
    with log.open("ab") as f:
        f.write(b"2 (Rule: probe)\n")
    dag.poll()
    assert dag.finished == {12}


def test_the_weights_learn_the_durations_the_run_sees(tmp_path):
    """Declared runtimes are cluster limits (a 60-minute training that takes a minute). One core runs two 2 s
    tables, a 60 s training, then four 30 s probes and eight more tables: 200 s in all. After the first probe
    (94 s) the runtimes alone put the run at 2m52s; learnt from what finished (each rule's median, the rest by the
    ratio of seconds to runtime) it is 3m20s, the truth, and a probe that has run 16 s counts as 16 s of work."""
    from swapkl.progress import DagProgress

    log = tmp_path / "snakemake.log"
    log.write_text("")
    clock = Clock()
    clock.now = 0.0
    weights = {1: 60.0, **{j: 20.0 for j in range(2, 6)}, **{j: 1.0 for j in range(6, 16)}}
    rules = {1: "train", **{j: "probe" for j in range(2, 6)}, **{j: "table" for j in range(6, 16)}}
    dag = DagProgress(str(log), lambda line: None, clock=clock, weights=weights, rules=rules)
    done = 0

    def at(t: float, text: str) -> None:
        with log.open("a") as f:
            f.write(text)
        clock.now = t
        dag.poll()

    def run(job: int, rule: str, start: float, end: float) -> None:
        nonlocal done
        at(start, f"\n[Mon Dec  7 00:00:00 2026]\nlocalrule {rule}:\n    output: x\n    jobid: {job}\n")
        done += 1
        at(end, f"[Mon Dec  7 00:00:00 2026]\nFinished jobid: {job} (Rule: {rule})\n{done} of 15 steps (1%) done\n")

    run(6, "table", 0.0, 2.0)
    run(7, "table", 2.0, 4.0)
    run(1, "train", 4.0, 64.0)
    run(2, "probe", 64.0, 94.0)
    assert dag.took == {6: 2.0, 7: 2.0, 1: 60.0, 2: 30.0}
    assert dag.line(94.0) == "swapkl: 4 of 15 jobs done, 1m34s elapsed; at this pace about 3m20s in all (ETA 1m46s)"
    declared = DagProgress(str(log), lambda line: None, clock=lambda: 94.0, weights=weights)
    declared.start = 0.0
    declared.poll()
    declared.took.clear()  # as before: runtimes alone
    assert "about 2m52s in all" in declared.line(94.0)
    at(94.0, "\nrule probe:\n    jobid: 3\n")  # the next probe starts; at 110 s it has run for 16 s
    assert dag.line(110.0).endswith("about 3m20s in all (ETA 1m30s)")
    # a rule with no finished job yet: its runtime times the ratio seen (94 s for 82 runtime units)
    assert dag.expected()[1] == 60.0 and dag.expected()[5] == 30.0 and dag.expected()[15] == 2.0
    dag.rules[5] = "heal"
    assert dag.expected()[5] == pytest.approx(20.0 * 94.0 / 82.0)


def test_a_job_of_a_rule_not_yet_seen_weighs_as_the_jobs_of_its_kind(tmp_path):
    """make real's figures and its probes declare about the same runtime (half an hour); a figure takes seconds, a
    probe minutes. Three 1 s stamps and a 300 s probe (runtime 30 each) have finished; ten figures (runtime 30)
    and a pruning job (runtime 60, a GPU job) have not, and no job of their rules has. Pooled, the ratio of
    seconds to runtime (303 s for 120) makes each figure 76 s and the pruning 152 s, the run 20m12s; by kind, a figure weighs as
    the stamps (1 s) and the pruning as the probe (600 s): 303 + 10 + 600 = 913 s, 15m13s. Before a job of each
    kind still to run has finished (the stamps alone), no estimate."""
    from swapkl.progress import DagProgress

    log = tmp_path / "snakemake.log"
    log.write_text("")
    weights = {**{j: 30.0 for j in range(1, 15)}, 15: 60.0}
    rules = {1: "stamp", 2: "stamp", 3: "stamp", 4: "probe", **{j: "plot" for j in range(5, 15)}, 15: "prune"}
    kinds = {j: "gpu" if rules[j] in ("probe", "prune") else "cpu" for j in rules}
    clock = Clock()
    clock.now = 0.0
    dag = DagProgress(str(log), lambda line: None, clock=clock, weights=weights, rules=rules, kinds=kinds)
    pooled = DagProgress(str(log), lambda line: None, clock=clock, weights=weights, rules=rules)
    done = 0

    def run(job: int, start: float, end: float) -> None:
        nonlocal done
        done += 1
        with log.open("a") as f:
            f.write(f"\nrule {rules[job]}:\n    jobid: {job}\n")
        clock.now = start
        dag.poll(), pooled.poll()
        with log.open("a") as f:
            f.write(f"Finished jobid: {job} (Rule: {rules[job]})\n{done} of 15 steps (1%) done\n")
        clock.now = end
        dag.poll(), pooled.poll()

    for job in (1, 2, 3):
        run(job, job - 1.0, float(job))
    assert dag.line(3.0).endswith("too few jobs done for an estimate yet")  # no GPU job has finished
    run(4, 3.0, 303.0)
    assert dag.expected()[5] == pytest.approx(1.0) and dag.expected()[15] == pytest.approx(600.0)
    assert dag.line(303.0) == "swapkl: 4 of 15 jobs done, 5m03s elapsed; at this pace about 15m13s in all (ETA 10m10s)"
    assert pooled.line(303.0).endswith("about 20m12s in all (ETA 15m09s)")
