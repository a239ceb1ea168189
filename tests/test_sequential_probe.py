"""swapkl.studies.sequential.probe on a tiny model: every variant's KL on the windows it saw equals the stock
transformers forward with a reordered ``nn.ModuleList`` on those windows (tests/naive_reference.py), decided
variants stop early, the tables say each variant's window count, and what is open at the cap is said."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import naive_reference as ref
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.studies.sequential.probe import measure_sequential, run_sequential_probe
from swapkl.studies.sequential.jobs import SequentialJob
from swapkl.stats.sequential import HOLDS, OPEN
from swapkl.stats.sequential_design import Decisions, Design
from tiny_models import random_tokens, tiny_model

# the per-window KL of the engine and of the reference differ by float32 rounding of the same modules; the
# tests of the uniform probe (tests/test_engine.py) bound it at 1e-6 relative, 1e-5 leaves margin
RTOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return tiny_model("gpt_neox", n_layers=5)


def _orders(key: str, n: int) -> list[int]:
    protocol, i, j = key.split(":")
    if protocol == "replacement":
        return ref.replacement_order(int(i), int(j), n)
    if protocol == "interchange":
        return ref.interchange_order(int(i), int(j), n)
    return ref.deletion_order(int(i), n)


def test_every_variant_equals_the_reference_on_the_windows_it_saw(model):
    ids = random_tokens(97, 24, 12, seed=3)
    mask = torch.ones_like(ids)
    result = measure_sequential(ProbeEngine(model), ids.numpy(), mask.numpy(), pairs="adjacent",
                                design=Design(first=4, batch=4, cap=24),
                                decisions=Decisions(signs=True, sets=("interchange",), budgets=(1,), n_boot=100))
    ev = result.evidence
    counts = {v.key: ev.n(v.key) for v in result.variants}
    assert set(counts) == {f"replacement:{i}:{i + 1}" for i in range(4)} | {f"replacement:{i + 1}:{i}" for i in
                                                                          range(4)} | \
        {f"interchange:{i}:{i + 1}" for i in range(4)} | {f"deletion:{i}:" for i in range(5)}
    assert all(n in (4, 8, 12, 16, 20, 24) for n in counts.values())
    base = ref.logits(model, ids, mask)
    for key, n in counts.items():
        want = ref.per_sequence(model, ids[:n], mask[:n], _orders(key, 5), base_logits=base[:n])
        got = np.asarray(ev.sums[key]) / ev.tokens[:n]
        np.testing.assert_allclose(got, want.kl_mean.numpy(), rtol=RTOL)
        assert ev.kl(key) == pytest.approx(want.kl_grand, rel=RTOL)
    # a pair's replacement variants stop together, when its sign holds (or at the cap); its interchange variant
    # may go on for the set decision, which reads every interchange variant
    for d in result.decided:
        if d.kind == "sign":
            r_ij, r_ji, inter = d.variants
            assert counts[r_ij] == counts[r_ji] == d.windows <= counts[inter]
            assert d.state == HOLDS or d.windows == 24
    assert result.looks[0] == {"look": 1, "windows": 4, "open": result.looks[0]["open"], "variants": 17}
    assert result.variant_windows == sum(counts.values())


def test_decided_variants_stop_and_open_ones_are_said(model):
    """A design whose first look settles what it can: variants of decisions that hold at the first look get no
    more windows; decisions open at the cap come back as undecided."""
    ids = random_tokens(97, 16, 12, seed=4)
    result = measure_sequential(ProbeEngine(model), ids.numpy(), np.ones_like(ids.numpy()), pairs="adjacent",
                                design=Design(first=8, batch=8, cap=16), decisions=Decisions(signs=True))
    first = {d.subject: d.state for d in _decisions_at(model, ids[:8], Design(first=8, batch=8, cap=8))}
    for d in result.decided:
        stop = 8 if first[d.subject] == HOLDS else 16
        assert all(result.evidence.n(k) == stop for k in d.variants)
    assert {d.subject for d in result.undecided} == {d.subject for d in result.decided if d.state == OPEN}


def _decisions_at(model, ids, design):
    return measure_sequential(ProbeEngine(model), ids.numpy(), np.ones_like(ids.numpy()), pairs="adjacent",
                              design=design, decisions=Decisions(signs=True)).decided


def test_the_tables_hold_each_variants_windows(model, tmp_path):
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    tokens = tmp_path / "windows.npy"
    np.save(tokens, random_tokens(97, 16, 12, seed=5).numpy())
    out, dec = tmp_path / "seq.parquet", tmp_path / "decisions.parquet"
    result = run_sequential_probe(SequentialJob(model=str(ckpt), out=str(out), decisions_out=str(dec),
                                                data=DataSpec(tokens=str(tokens)),
                                                design=Design(first=4, batch=4, cap=16),
                                                decisions=Decisions(signs=True),
                                                device="cpu"))
    rows = pq.read_table(out).to_pandas()
    for r in rows[rows["protocol"] != "base"].itertuples():
        key = f"{r.protocol}:{int(r.layer_i)}:{int(r.layer_j)}"
        assert r.n_seqs == len(r.seq_kl_sum) == result.evidence.n(key)
        assert r.kl_mean == pytest.approx(sum(r.seq_kl_sum) / sum(r.seq_tokens))
    base = rows[rows["protocol"] == "base"].iloc[0]
    assert base.n_seqs == max(rows["n_seqs"])
    decisions = pq.read_table(dec).to_pandas()
    assert len(decisions) == 4 and set(decisions["state"]) <= {HOLDS, OPEN}
    assert (decisions["confidence"] == 0.95).all()


def test_bad_designs_and_decisions_are_one_line_errors(model):
    ids = random_tokens(97, 8, 12, seed=6).numpy()
    with pytest.raises(SwapKLError, match=r"^the window pool holds 8 windows, fewer than the first look's 16$"):
        measure_sequential(ProbeEngine(model), ids, np.ones_like(ids), pairs="adjacent", design=Design(),
                           decisions=Decisions())
    with pytest.raises(SwapKLError, match=r"^a sequential probe needs a decision"):
        measure_sequential(ProbeEngine(model), ids, np.ones_like(ids), pairs="adjacent",
                           design=Design(first=4, batch=4, cap=8), decisions=Decisions(signs=False))
    with pytest.raises(SwapKLError, match=r"pair \(0, 2\) is not among the probed pairs"):
        measure_sequential(ProbeEngine(model), ids, np.ones_like(ids), pairs="adjacent",
                           design=Design(first=4, batch=4, cap=8),
                           decisions=Decisions(signs=False, halfwidth={"within:2": 0.1}))


def _run(ckpt, tokens, folder, progress=None, design=Design(first=4, batch=4, cap=16)):
    folder.mkdir(exist_ok=True)
    return run_sequential_probe(SequentialJob(model=str(ckpt), out=str(folder / "seq.parquet"),
                                              decisions_out=str(folder / "dec.parquet"),
                                              data=DataSpec(tokens=str(tokens), seed=2), design=design,
                                              decisions=Decisions(signs=True, sets=("interchange",), budgets=(1,),
                                                                  n_boot=100),
                                              device="cpu", progress_path=progress))


def test_a_killed_sequential_run_resumes_and_gives_the_uninterrupted_tables(model, tmp_path, monkeypatch):
    """Kill and resume as the uniform probe does: a run stopped part-way keeps what it finished in its progress
    file; started again it computes only the rest, and both tables equal an uninterrupted run's; the progress
    file is removed once the tables are written."""
    from crash import crash_after

    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    tokens = tmp_path / "windows.npy"
    np.save(tokens, random_tokens(97, 16, 12, seed=8).numpy())
    whole = _run(ckpt, tokens, tmp_path / "whole")
    progress = tmp_path / "resumed" / "seq.progress"
    with crash_after(monkeypatch, 25):
        _run(ckpt, tokens, tmp_path / "resumed", progress=str(progress))
    assert progress.exists() and not (tmp_path / "resumed" / "seq.parquet").exists()
    calls = []
    real = ProbeEngine.token_stats
    monkeypatch.setattr(ProbeEngine, "token_stats", lambda self, s, v: calls.append(v.key) or real(self, s, v))
    resumed = _run(ckpt, tokens, tmp_path / "resumed", progress=str(progress))
    assert len(calls) == whole.variant_windows // 4 - 25  # batches of 4 windows: only what the kill left undone
    for name in ("seq.parquet", "dec.parquet"):
        a = pq.read_table(tmp_path / "whole" / name).to_pandas()
        b = pq.read_table(tmp_path / "resumed" / name).to_pandas()
        assert a.to_json() == b.to_json()
    assert resumed.variant_windows == whole.variant_windows and not progress.exists()


def test_the_pool_is_walked_in_a_seeded_random_order(model, tmp_path):
    """Each look's windows are a random sample of the pool (neighbouring windows of a text are alike): the probe
    table's per-window columns follow numpy's default_rng(seed) permutation of the pool, which the provenance
    records."""
    from swapkl.studies.sequential.probe import walk_order

    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    pool = random_tokens(97, 16, 12, seed=9)
    tokens = tmp_path / "windows.npy"
    np.save(tokens, pool.numpy())
    _run(ckpt, tokens, tmp_path / "run", design=Design(first=16, batch=16, cap=16))
    order = np.random.default_rng(2).permutation(16)
    assert walk_order(16, 2).tolist() == order.tolist() and order.tolist() != list(range(16))
    rows = pq.read_table(tmp_path / "run" / "seq.parquet").to_pandas()
    row = rows[rows["protocol"] == "deletion"].iloc[0]
    want = ref.per_sequence(model, pool[order], torch.ones_like(pool), _orders(f"deletion:{int(row.layer_i)}:", 5))
    np.testing.assert_allclose(np.asarray(row.seq_kl_sum) / np.asarray(row.seq_tokens), want.kl_mean.numpy(),
                               rtol=RTOL)
    from swapkl.tables import provenance

    meta = provenance.read(str(tmp_path / "run" / "seq.parquet"))
    assert meta["sequential"]["walk"] == "numpy.random.default_rng(2).permutation(16)"


def test_a_sign_that_held_is_kept_when_a_later_look_would_reopen_it(model, monkeypatch):
    """The run's loop keeps a held sign as it was at its look: a later look whose interval straddles 0 (here a
    stand-in evaluation that says so) does not reopen it, and its variants get no more windows, while an open
    decision's go on to the cap."""
    from swapkl.stats.sequential import Decision, pair_keys
    from swapkl.studies.sequential import probe as sequential_probe

    looks = []

    def evaluate(evidence, variants, decisions, pairs, n_layers, alpha, seed):
        looks.append(len(evidence.tokens))
        first, second = pair_keys(0, 1), pair_keys(1, 2)
        held = len(looks) == 1  # holds at the first look only
        return [Decision("sign", "0-1", HOLDS if held else OPEN, 0.2, 0.1 if held else -0.1, 0.3,
                         evidence.common(first), first, "+" if held else ""),
                Decision("sign", "1-2", OPEN, 0.0, -0.1, 0.1, evidence.common(second), second)]

    monkeypatch.setattr(sequential_probe, "evaluate", evaluate)
    ids = random_tokens(97, 16, 12, seed=4)
    result = measure_sequential(ProbeEngine(model), ids.numpy(), np.ones_like(ids.numpy()), pairs="adjacent",
                                design=Design(first=8, batch=4, cap=16), decisions=Decisions(signs=True))
    assert looks == [8, 12, 16]
    kept, still = result.decided
    assert (kept.state, kept.answer, kept.low, kept.windows, kept.look) == (HOLDS, "+", 0.1, 8, 1)
    assert (still.state, still.look) == (OPEN, 3)
    assert all(result.evidence.n(k) == 8 for k in pair_keys(0, 1))
    assert all(result.evidence.n(k) == 16 for k in pair_keys(1, 2))
