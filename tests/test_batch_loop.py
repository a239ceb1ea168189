"""Windows batched by length (``window_batches(by_length=True)``) against the uncut consecutive batches.

Sorting windows by length and cutting each batch after its longest window changes only which rows share a
matmul and how many masked key columns an attention row sums over, never what a kept position computes
(right padding, causal attention). So every per-position KL and NLL must equal the uncut run's up to
rounding, per window and in window order, and counted padding (mask 1 everywhere) must keep every
position and every window in place.

Tolerance analysis (per valid position, so errors of different positions cannot cancel):

1. The stream. Both runs apply the same float32 operations to the same values; they differ in the shapes
   of the batched matmuls and in the number of masked keys an attention row sums over (each contributes an
   exact 0: exp of the mask's most negative float underflows), so kernels may block and round differently.
   That is the situation analysed in tests/test_engine.py (shared prefixes and chunking change the same
   shapes): a random walk of ~sqrt(L d) u ~ 1e-6 relative through 5 blocks of width 32, a measured worst
   case of 1.1e-6 over the AVX2, AVX-512 and default kernel paths, bound 1e-5. We require the same of each
   final-normed stream vector: ``|h_cut - h_uncut|_2 <= EPS |h_uncut|_2`` with ``EPS = 1e-5`` (measured
   here: at most 2.3e-6, Llama, on each of the three paths of an AMD EPYC; 6e-7 for GPT-NeoX).
2. What a stream error of that size does to KL and NLL: ``float32_bounds.stream_change_bounds`` (first order
   with exact derivatives, times 2 for the second order; ``|dz| <~ 1e-4`` here).
3. The unembedding and KL of each run, against the exact KL of its own float32 stream: the worst-case
   bounds of tests/float32_bounds.py (chunks hold other tokens in the two runs), once per run.

The bound is the sum of 2 and 3; a per-window sum gets the sum of its positions' bounds. A shifted or
swapped window or position moves the stream by O(1) relative and fails step 1 by five orders of magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import float32_bounds
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import select_windows
from swapkl.model.batch_loop import in_window_order, sweep, window_batches
from swapkl.model.engine import ProbeEngine
from swapkl.probes.protocols import build_variants
from tiny_models import ARCHS, random_tokens, tiny_model

N_LAYERS = 5
VOCAB = 97
EPS = 1e-5  # relative error of the final-normed stream (step 1 above)
LENGTHS = [40, 3, 17, 2, 29, 8, 35, 5, 12, 21, 1, 26]  # very different lengths, in no order
SEQ_LEN = 48  # every window padded, the longest by 8 columns


def _windows():
    ids = random_tokens(VOCAB, len(LENGTHS), SEQ_LEN, seed=5)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(LENGTHS):
        mask[r, :n] = 1
        ids[r, n:] = 0  # the pad id
    return ids.numpy(), mask.numpy()


def per_position(engine, batches, variants, n: int, seq_len: int = SEQ_LEN):
    """Per (variant, window, position): KL, NLL and the final-normed stream, NaN where not valid; and the
    per-window sums of the engine's own reduction, put in window order by the batches' rows."""
    kl = np.full((len(variants) + 1, n, seq_len), np.nan)
    nll = kl.copy()
    hid = np.full((len(variants) + 1, n, seq_len, engine.unemb.weight.shape[1]), np.nan, dtype=np.float32)
    sums = {key: [[] for _ in range(len(variants) + 1)] for key in ("kl_sum", "tokens", "nll_sum", "nll_tokens")}
    for m in sweep(engine, batches, variants, device="cpu"):
        k = 0 if m.k is None else m.k + 1
        valid = m.state.valid
        rows, t = m.batch.rows, valid.shape[1]
        for out, vals in ((kl, m.kl), (nll, m.nll)):
            block = np.full(valid.shape, np.nan)
            block[valid.numpy()] = vals.numpy()
            out[k, rows, :t] = block
        stats = engine.seq_stats(m.state, m.kl, m.nll)
        for key in sums:
            sums[key][k].append(getattr(stats, key).numpy())
    for m in sweep(engine, batches, variants, device="cpu", targets=False):
        k = 0 if m.k is None else m.k + 1
        valid = m.state.valid
        block = np.full((*valid.shape, hid.shape[-1]), np.nan, dtype=np.float32)
        with torch.inference_mode():
            block[valid.numpy()] = engine.final_normed(m.hidden, valid).numpy()
        hid[k, m.batch.rows, :valid.shape[1]] = block
    ordered = {key: np.stack([in_window_order(parts, batches) for parts in per]) for key, per in sums.items()}
    return kl, nll, hid, ordered


@pytest.fixture(scope="module", params=ARCHS)
def model(request):
    return tiny_model(request.param, n_layers=N_LAYERS, vocab=VOCAB)


def test_length_batches_cut_padding_and_keep_every_window_once():
    ids, mask = _windows()
    batches = window_batches(ids, mask, 5, by_length=True)
    rows = [r for b in batches for r in b.rows]
    assert sorted(rows) == list(range(len(LENGTHS)))
    assert [LENGTHS[r] for r in rows] == sorted(LENGTHS, reverse=True)
    for b in batches:
        assert b.input_ids.shape[1] == max(LENGTHS[r] for r in b.rows)  # cut after the longest window
        np.testing.assert_array_equal(b.input_ids.numpy(), ids[b.rows, :b.input_ids.shape[1]])
        np.testing.assert_array_equal(b.attention_mask.numpy(), mask[b.rows, :b.input_ids.shape[1]])
        assert (mask[b.rows, b.input_ids.shape[1]:] == 0).all()  # only padding was cut
    assert sum(b.input_ids.numel() for b in batches) < 0.6 * ids.size


def test_length_batches_match_uncut_batches_per_position(model):
    ids, mask = _windows()
    engine = ProbeEngine(model, chunk_tokens=7)  # several chunks, each holding other tokens in the two runs
    variants = build_variants(["replacement", "interchange", "deletion"], "adjacent", N_LAYERS)
    n = len(LENGTHS)
    uncut = per_position(engine, window_batches(ids, mask, 5), variants, n)
    cut_batches = window_batches(ids, mask, 5, by_length=True)
    assert any(b.input_ids.shape[1] < SEQ_LEN for b in cut_batches) and not all(
        isinstance(b.rows, slice) for b in cut_batches)
    cut = per_position(engine, cut_batches, variants, n)
    valid = mask.astype(bool)
    # which positions exist, and the counts, are exactly the uncut run's
    for a, b in zip(uncut[:2], cut[:2]):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    for key in ("tokens", "nll_tokens"):
        np.testing.assert_array_equal(cut[3][key], uncut[3][key])
    np.testing.assert_array_equal(uncut[3]["tokens"][0], mask.sum(1))
    w, b = engine.unemb.weight, engine.unemb.bias
    for k in range(len(variants) + 1):
        what = "base" if k == 0 else variants[k - 1].key
        hb_u, hb_c = torch.from_numpy(uncut[2][0][valid]), torch.from_numpy(cut[2][0][valid])
        hv_u, hv_c = torch.from_numpy(uncut[2][k][valid]), torch.from_numpy(cut[2][k][valid])
        # 1. the stream
        rel = ((hv_c - hv_u).double().norm(dim=1) / hv_u.double().norm(dim=1)).max().item()
        assert rel <= EPS, f"{what}: final-normed stream moved by {rel:.3g} relative"
        # 2. + 3. per position
        kl_move, nll_move = float32_bounds.stream_change_bounds(w, b, hb_u, hv_u, EPS)
        kl_tol = (float32_bounds.kl_bound(w, b, hb_u, hv_u) + float32_bounds.kl_bound(w, b, hb_c, hv_c)
                  + kl_move).numpy()
        kl_u, kl_c = uncut[0][k][valid], cut[0][k][valid]
        err = np.abs(kl_c - kl_u)
        assert (err <= kl_tol).all(), f"{what}: KL moved by {err.max():.3g}, bound {kl_tol[err.argmax()]:.3g}"
        has = ~np.isnan(uncut[1][k][valid])
        labels = torch.from_numpy(ids[valid]).roll(-1)  # only positions with a next token are compared
        nll_tol = (float32_bounds.nll_bound(w, b, hv_u, labels) + float32_bounds.nll_bound(w, b, hv_c, labels)
                   + nll_move).numpy()
        nerr = np.abs(cut[1][k][valid] - uncut[1][k][valid])[has]
        assert (nerr <= nll_tol[has]).all(), f"{what}: NLL moved by {nerr.max():.3g}"
        # the per-window sums of the engine's reduction, in window order: within the sum of the bounds
        kl_tol_w = np.zeros(n)
        np.add.at(kl_tol_w, np.nonzero(valid)[0], kl_tol)
        np.testing.assert_array_less(np.abs(cut[3]["kl_sum"][k] - uncut[3]["kl_sum"][k]), kl_tol_w + 1e-12)
        nll_tol_w = np.zeros(n)
        np.add.at(nll_tol_w, np.nonzero(valid)[0][has], nll_tol[has])
        np.testing.assert_array_less(np.abs(cut[3]["nll_sum"][k] - uncut[3]["nll_sum"][k]), nll_tol_w + 1e-12)


def test_counted_padding_keeps_every_position_and_window_order(model):
    """``padding: counted`` windows (mask 1 everywhere, padded with a real token) are neither cut nor reordered:
    the same batches as the uncut ones, so the same numbers bit for bit; the same windows masked are cut."""
    paragraphs = [" ".join(["x"] * n) for n in LENGTHS]
    tokenize = lambda text: [1 + (len(text) + k) % (VOCAB - 1) for k in range(len(text.split()))]  # noqa: E731
    spec = dict(text_file="t.txt", n_seqs=len(LENGTHS), seq_len=SEQ_LEN, min_tokens=1, selection="first")
    counted = select_windows(paragraphs, tokenize, DataSpec(**spec, padding="counted"), pad_id=0)
    masked = select_windows(paragraphs, tokenize, DataSpec(**spec), pad_id=0)
    assert (counted.attention_mask == 1).all() and (masked.attention_mask == 0).any()
    plain = window_batches(counted.input_ids, counted.attention_mask, 5)
    by_length = window_batches(counted.input_ids, counted.attention_mask, 5, by_length=True)
    assert [list(b.rows) for b in by_length] == [list(range(len(LENGTHS)))[b.rows] for b in plain]
    for p, q in zip(plain, by_length):
        assert q.input_ids.shape == (p.input_ids.shape[0], SEQ_LEN)
        assert torch.equal(p.input_ids, q.input_ids) and torch.equal(p.attention_mask, q.attention_mask)
    assert any(b.input_ids.shape[1] < SEQ_LEN for b in window_batches(masked.input_ids, masked.attention_mask, 5,
                                                                        by_length=True))
    engine = ProbeEngine(model)
    variants = build_variants(["deletion"], "adjacent", N_LAYERS)
    got = [(m.k, m.batch.input_ids.shape[0], m.kl, m.nll) for m in sweep(engine, by_length, variants, device="cpu")]
    want = [(m.k, m.kl, m.nll) for m in sweep(engine, plain, variants, device="cpu")]
    for (k, rows, kl, nll), (k2, kl2, nll2) in zip(got, want, strict=True):
        assert k == k2 and kl.shape == kl2.shape == (rows * SEQ_LEN,)  # every position of every window
        assert torch.equal(kl, kl2) and torch.equal(nll.nan_to_num(-1.0), nll2.nan_to_num(-1.0))


def test_in_window_order_rejects_rows_that_miss_a_window():
    ids, mask = _windows()
    batches = window_batches(ids, mask, 5, by_length=True)
    values = [np.asarray(b.rows, dtype=float) for b in batches]
    np.testing.assert_array_equal(in_window_order(values, batches), np.arange(len(LENGTHS)))
    with pytest.raises(ValueError, match="cover every window"):
        in_window_order(values[:-1] + [values[-1][:1]], batches[:-1] + [batches[-1].__class__(
            batches[-1].rows[:1], batches[-1].input_ids[:1], batches[-1].attention_mask[:1])])
