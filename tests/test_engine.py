"""The probe engine against the independent naive reference (tests/naive_reference.py).

Every comparison is per sequence (KL mean and NLL mean over that sequence's valid
positions), so errors in different sequences cannot cancel, at 1e-5 relative, for every
architecture, every pair set and protocol, and for padded batches.
"""

from __future__ import annotations

import pytest
import torch

import float32_bounds
import naive_reference as ref
from swapkl.adapters import get_adapter
from swapkl.adapters.qwen3 import Qwen3Adapter
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.probes.protocols import build_variants
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.probes.protocols.interchange import interchange
from swapkl.probes.protocols.replacement import replacement
from tiny_models import ARCHS, random_tokens, tiny_model

N_LAYERS = 5
VOCAB = 97
# Tolerance analysis. Engine and reference run the same float32 modules on the same tokens; they differ
# in batch shapes (shared prefixes, chunking, so matmul kernels may block and round differently) and in
# how KL is formed (swapkl.model.kl's summaries vs the textbook float64 form). Rounding through 5 blocks of
# width 32 perturbs the stream by a random walk of ~sqrt(5 * 32) * u ~ 1e-6 relative (u = 6e-8), and a
# per-sequence KL or NLL mean inherits about that relative error (the worst-case bound of
# tests/float32_bounds.py is ~100x looser and would not catch a one-position shift). Measured maximum
# over every comparison here: 7.9e-7 (ATen default path), 1.1e-6 (AVX2), 6.9e-7 (AVX-512), so 1e-5
# leaves a 9x margin; tests/test_cpu_kernels.py reruns this module on the other kernel paths.
RTOL = 1e-5


def _padded_batch(seq_len: int = 20):
    """Three rows: full length, 14 valid tokens, 7 valid tokens (attention-mask zeros at the end)."""
    ids = random_tokens(VOCAB, 3, seq_len, seed=3)
    mask = torch.ones_like(ids)
    mask[1, 14:] = 0
    mask[2, 7:] = 0
    return ids, mask


def _ref_order(v) -> list[int]:
    """The reference's own order for a variant, from its protocol and layer indices alone."""
    if v.protocol == "replacement":
        return ref.replacement_order(v.layer_i, v.layer_j, N_LAYERS)
    if v.protocol == "interchange":
        return ref.interchange_order(v.layer_i, v.layer_j, N_LAYERS)
    if v.protocol == "deletion":
        return ref.deletion_order(v.layer_i, N_LAYERS)
    raise AssertionError(v.protocol)


def _assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    got, want = got.double(), want.double()
    assert torch.isfinite(want).all(), what
    err = ((got - want).abs() / want.abs()).max().item()
    assert err <= RTOL, f"{what}: max relative error {err:.3g} (engine {got.tolist()}, reference {want.tolist()})"


@pytest.fixture(scope="module", params=ARCHS)
def model(request):
    return tiny_model(request.param, n_layers=N_LAYERS, vocab=VOCAB)


@pytest.mark.parametrize("pair_set", ["adjacent", "within:2", "all"])
def test_engine_matches_naive_reference(model, pair_set):
    ids, mask = _padded_batch()
    engine = ProbeEngine(model, chunk_tokens=7)  # several chunks, one of them ragged
    state = engine.base_pass(ids, mask)
    base_logits = ref.logits(model, ids, mask)
    variants = build_variants(["replacement", "interchange", "deletion"], pair_set, N_LAYERS)
    seen = set()
    for v in engine.plan(variants):  # the order run_probe uses, so shared prefixes are exercised
        stats = engine.variant_seq_stats(state, v)
        want = ref.per_sequence(model, ids, mask, _ref_order(v), base_logits)
        _assert_close(stats.kl_sum / stats.tokens, want.kl_mean, f"{v.key} per-sequence KL")
        _assert_close(stats.nll_sum / stats.nll_tokens, want.nll_mean, f"{v.key} per-sequence NLL")
        assert stats.tokens.tolist() == want.kl_tokens.tolist()
        assert stats.nll_tokens.tolist() == want.nll_tokens.tolist()
        assert want.kl_grand > 1e-3  # the variant really changes the output (the test can fail)
        seen.add((v.protocol, v.layer_i, v.layer_j))
    # both replacement directions, first and last block deleted
    assert ("replacement", 0, 1) in seen and ("replacement", 1, 0) in seen
    assert ("deletion", 0, None) in seen and ("deletion", N_LAYERS - 1, None) in seen


def test_base_nll_matches_reference(model):
    ids, mask = _padded_batch()
    engine = ProbeEngine(model, chunk_tokens=5)
    state = engine.base_pass(ids, mask)
    base = engine.base_seq_stats(state)
    want = ref.per_sequence(model, ids, mask, ref.base_order(N_LAYERS))
    assert want.kl_mean.abs().max().item() < 1e-12  # the reference's base is the base
    assert base.kl_sum.abs().max().item() == 0.0
    _assert_close(base.nll_sum / base.nll_tokens, want.nll_mean, "base per-sequence NLL")


def test_padding_never_counts(model):
    """A padded row gives exactly what the same tokens give alone, without padding."""
    ids, mask = _padded_batch()
    # garbage in the padded positions must not matter either
    ids2 = ids.clone()
    ids2[mask == 0] = (ids2[mask == 0] + 11) % VOCAB
    engine = ProbeEngine(model, chunk_tokens=16)
    s1 = engine.base_pass(ids, mask)
    s2 = engine.base_pass(ids2, mask)
    for v in (replacement(1, 3, N_LAYERS), interchange(0, 4, N_LAYERS), deletion(2, N_LAYERS)):
        a = engine.variant_seq_stats(s1, v)
        b = engine.variant_seq_stats(s2, v)
        _assert_close(b.kl_sum, a.kl_sum, f"{v.key} with other padding tokens")
        for row in (1, 2):
            n = int(mask[row].sum())
            alone = engine.base_pass(ids[row : row + 1, :n], torch.ones(1, n, dtype=mask.dtype))
            c = engine.variant_seq_stats(alone, v)
            _assert_close(a.kl_sum[row : row + 1] / a.tokens[row], c.kl_sum / c.tokens, f"{v.key} row {row} alone")
            _assert_close(a.nll_sum[row : row + 1], c.nll_sum, f"{v.key} row {row} alone NLL")


def test_unpadded_batch_and_chunk_size_do_not_matter(model):
    ids = random_tokens(VOCAB, 2, 24, seed=5)
    mask = torch.ones_like(ids)
    out = []
    for chunk in (3, 48, 4096):
        engine = ProbeEngine(model, chunk_tokens=chunk)
        state = engine.base_pass(ids, mask)
        out.append(engine.variant_seq_stats(state, replacement(3, 1, N_LAYERS)).kl_sum)
    want = ref.per_sequence(model, ids, mask, ref.replacement_order(3, 1, N_LAYERS))
    for got in out:
        _assert_close(got / 24, want.kl_mean, "replacement 3<-1, unpadded")


def test_resumes_from_first_changed_slot_without_recomputing(model):
    """Exactly the blocks order[first_changed:] run for a variant, at the right slots."""
    ids, mask = _padded_batch()
    engine = ProbeEngine(model)
    state = engine.base_pass(ids, mask)
    calls: list[int] = []
    blocks = list(ref.block_list(model))
    hooks = [b.register_forward_pre_hook(lambda m, a, k=k: calls.append(k)) for k, b in enumerate(blocks)]
    try:
        cases = [
            (replacement(2, 0, N_LAYERS), [0, 3, 4]),
            (replacement(0, 2, N_LAYERS), [2, 1, 2, 3, 4]),
            (interchange(1, 3, N_LAYERS), [3, 2, 1, 4]),
            (deletion(0, N_LAYERS), [1, 2, 3, 4]),
            (deletion(3, N_LAYERS), [4]),
            (deletion(N_LAYERS - 1, N_LAYERS), []),
        ]
        for v, want in cases:
            calls.clear()
            before = engine.layer_evals
            engine.variant_seq_stats(state, v)
            assert calls == want, v.key
            assert engine.layer_evals - before == len(want)
    finally:
        for h in hooks:
            h.remove()


def test_no_weight_copies_and_model_unchanged(model):
    ids, mask = _padded_batch()
    ptrs = [p.data_ptr() for p in model.parameters()]
    before = ref.logits(model, ids, mask)
    engine = ProbeEngine(model)
    state = engine.base_pass(ids, mask)
    for v in build_variants(["replacement", "interchange", "deletion"], "adjacent", N_LAYERS):
        engine.variant_seq_stats(state, v)
    assert [p.data_ptr() for p in model.parameters()] == ptrs
    assert torch.equal(ref.logits(model, ids, mask), before)
    assert len(ref.block_list(model)) == N_LAYERS and model.config.num_hidden_layers == N_LAYERS


def test_reference_restores_model_on_error():
    model = tiny_model("llama", n_layers=3, vocab=VOCAB)
    blocks = list(ref.block_list(model))
    with pytest.raises(RuntimeError):
        ref.logits(model, torch.tensor([[1, 2, 3]]), torch.ones(1, 4, dtype=torch.long), [2, 1])  # bad mask shape
    assert list(ref.block_list(model)) == blocks and model.config.num_hidden_layers == 3


def test_a_wrong_mask_choice_is_caught():
    """Guard that the comparison can fail: a Qwen3 adapter that picks the mask by block instead
    of by slot disagrees with the reference once a sliding block runs in a full-attention slot."""
    model = tiny_model("qwen3", n_layers=N_LAYERS, vocab=VOCAB)
    assert model.config.layer_types[0] == "full_attention" and model.config.layer_types[4] == "sliding_attention"
    ids = random_tokens(VOCAB, 2, 24, seed=7)  # longer than the sliding window
    mask = torch.ones_like(ids)
    v = replacement(0, 4, N_LAYERS)
    want = ref.per_sequence(model, ids, mask, ref.replacement_order(0, 4, N_LAYERS))

    class ByBlock(Qwen3Adapter, register=False):
        def run_block(self, block, slot, h, ctx):
            return super().run_block(block, block, h, ctx)

    engine = ProbeEngine(model)
    engine.adapter = ByBlock(model)
    got = engine.variant_seq_stats(engine.base_pass(ids, mask), v)
    err = ((got.kl_sum / got.tokens - want.kl_mean).abs() / want.kl_mean).max().item()
    assert err > 1e-3


def test_unsupported_architecture_is_named():
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    model = GPTNeoForCausalLM(GPTNeoConfig(num_layers=2, hidden_size=16, num_heads=2, vocab_size=50,
                                           attention_types=[[["global"], 2]]))
    with pytest.raises(SwapKLError, match=r"'gpt_neo'.*" + "supported: bloom, gemma3_text, gpt2, gpt_neox, llama, mistral, olmo, olmo2, opt, qwen3"):
        get_adapter(model)


def test_non_finite_variant_names_the_variant():
    model = tiny_model("llama", n_layers=3, vocab=VOCAB)
    engine = ProbeEngine(model)
    state = engine.base_pass(random_tokens(VOCAB, 2, 8), torch.ones(2, 8, dtype=torch.long))
    with torch.no_grad():
        ref.block_list(model)[2].mlp.down_proj.weight.fill_(float("nan"))
    # deletion of block 2 never runs it and stays finite
    engine.variant_seq_stats(state, deletion(2, 3))
    with pytest.raises(SwapKLError, match=r"variant replacement:0:2 produced non-finite logits"):
        engine.variant_seq_stats(state, replacement(0, 2, 3))


def _plain_evals(variants) -> int:
    return sum(len(v.order) - v.first_changed_slot(N_LAYERS) for v in variants)


def test_planned_sharing_is_bit_identical_and_saves_the_shared_slots(model):
    """In plan order M_{i<->j} resumes from M_{i<-j} at slot j (saving j-i blocks), M_{-i} from M_{i<-i+1}."""
    ids, mask = _padded_batch()
    variants = build_variants(["replacement", "interchange", "deletion"], "all", N_LAYERS)
    plain = ProbeEngine(model, chunk_tokens=16)
    s1 = plain.base_pass(ids, mask)
    want = {v.key: plain.variant_seq_stats(s1, v) for v in variants}
    shared = ProbeEngine(model, chunk_tokens=16)
    s2 = shared.base_pass(ids, mask)
    planned = shared.plan(variants)
    assert sorted(v.key for v in planned) == sorted(want)
    before = shared.layer_evals
    got = {v.key: shared.variant_seq_stats(s2, v) for v in planned}
    for k in want:
        assert torch.equal(got[k].kl_sum, want[k].kl_sum) and torch.equal(got[k].nll_sum, want[k].nll_sum), k
    saving = sum(j - i for i in range(N_LAYERS) for j in range(i + 1, N_LAYERS)) + (N_LAYERS - 1)
    assert shared.layer_evals - before == _plain_evals(variants) - saving
    assert plain.layer_evals - N_LAYERS == _plain_evals(variants)


def test_planned_sharing_runs_only_the_blocks_after_the_shared_prefix(model):
    ids, mask = _padded_batch()
    engine = ProbeEngine(model)
    state = engine.base_pass(ids, mask)
    planned = engine.plan([replacement(1, 3, N_LAYERS), interchange(1, 3, N_LAYERS)])
    assert [v.protocol for v in planned] == ["interchange", "replacement"]  # (0,3,2,1,4) < (0,3,2,3,4)
    calls: list[int] = []
    blocks = ref.block_list(model)
    hooks = [b.register_forward_pre_hook(lambda m, a, k=k: calls.append(k)) for k, b in enumerate(blocks)]
    try:
        engine.variant_seq_stats(state, planned[0])
        assert calls == [3, 2, 1, 4]
        calls.clear()
        engine.variant_seq_stats(state, planned[1])
        assert calls == [3, 4]  # slots 3 and 4 only: slots 1..2 are shared with the interchange
    finally:
        for h in hooks:
            h.remove()


def test_planned_order_out_of_step_stays_exact(model):
    """Skipped variants (a resumed run), other batches in between: nothing stale is ever reused."""
    ids, mask = _padded_batch()
    other_ids = random_tokens(VOCAB, 3, 20, seed=9)
    variants = build_variants(["replacement", "interchange", "deletion"], "within:2", N_LAYERS)
    plain = ProbeEngine(model)
    sp = plain.base_pass(ids, mask)
    engine = ProbeEngine(model)
    planned = engine.plan(variants)
    state = engine.base_pass(ids, mask)
    other = engine.base_pass(other_ids, torch.ones_like(other_ids))
    for k, v in enumerate(planned):
        if k % 3 == 1:
            continue  # a variant already finished in an earlier run
        s = state if k % 2 == 0 else other
        got = engine.variant_seq_stats(s, v)
        if s is state:
            assert torch.equal(got.kl_sum, plain.variant_seq_stats(sp, v).kl_sum), v.key
        else:
            ps = plain.base_pass(other_ids, torch.ones_like(other_ids))
            assert torch.equal(got.kl_sum, plain.variant_seq_stats(ps, v).kl_sum), v.key


def test_kl_formula_with_bias_and_chunks_against_direct_float64():
    """swapkl.model.kl's summaries (negent, p-weighted rows, bias) against the textbook KL from full logits."""
    from swapkl.model.kl import Unembedding, base_targets, kl_and_nll

    g = torch.Generator().manual_seed(0)
    w = torch.randn(50, 8, generator=g)
    b = torch.randn(50, generator=g)
    hb = torch.randn(13, 8, generator=g)
    hv = hb + 0.3 * torch.randn(13, 8, generator=g)
    labels = torch.randint(0, 50, (13,), generator=g)
    labels[-1] = -1
    unemb = Unembedding(w, b)
    zb = (hb.double() @ w.double().T + b.double())
    zv = (hv.double() @ w.double().T + b.double())
    lp, lq = torch.log_softmax(zb, -1), torch.log_softmax(zv, -1)
    want_kl = (lp.exp() * (lp - lq)).sum(-1)
    want_nll = -lq.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    # tolerance: the worst-case float32 error of swapkl.model.kl's operations on every kernel path (derivation
    # in tests/float32_bounds.py), per token: 6e-5..2e-4 nats here (the observed error is ~1e-6)
    kl_tol = float32_bounds.kl_bound(w, b, hb, hv)
    nll_tol = float32_bounds.nll_bound(w, b, hv, labels)[:-1]
    assert (kl_tol < 0.2 * want_kl).all()  # tight enough that a wrong term (bias, lse, chunk offset) fails
    for chunk in (1, 4, 13, 100):
        kl, nll = kl_and_nll(unemb, hv, base_targets(unemb, hb, labels, chunk), chunk)
        err = (kl - want_kl).abs()
        assert (err <= kl_tol).all(), f"chunk {chunk}: KL error {err.max():.3g} over the bound {kl_tol[err.argmax()]:.3g}"
        nll_err = (nll[:-1] - want_nll[:-1]).abs()
        assert (nll_err <= nll_tol).all(), f"chunk {chunk}: NLL error {nll_err.max():.3g} over the bound"
        assert torch.isnan(nll[-1])  # no next token
        base_kl, _ = kl_and_nll(unemb, hb, base_targets(unemb, hb, labels, chunk), chunk)
        assert base_kl.abs().max().item() < 1e-9


def test_sweep_yields_every_item_once_skips_done_ones_and_frees_each_batch(model):
    """swapkl.model.batch_loop against the engine called by hand, batch by batch: the same per-token KL and NLL (bit for
    bit: same calls), each (batch, variant) once with its position, nothing computed for items marked done,
    and no batch's base-pass state alive once the next batch starts (two residual caches never coexist)."""
    import gc
    import weakref

    from swapkl.model.batch_loop import BASE, sweep, window_batches

    ids = random_tokens(VOCAB, 5, 9, seed=11)
    mask = torch.ones_like(ids)
    mask[4, 6:] = 0
    variants = [deletion(3, N_LAYERS), replacement(1, 2, N_LAYERS), deletion(3, N_LAYERS)]  # one twice
    hand = ProbeEngine(model)
    want = {}
    for b, lo in enumerate(range(0, 5, 2)):
        s = hand.base_pass(ids[lo:lo + 2], mask[lo:lo + 2])
        want[b, None] = s.base_nll
        for k, v in enumerate(variants):
            want[b, k] = hand.token_stats(s, v)[1]
    # done: all of batch 1, the replacement in batch 2 (by variant: both copies of a variant share its result)
    done = {(1, BASE.key), (1, variants[0].key), (1, variants[1].key), (2, variants[1].key)}
    engine = ProbeEngine(model)
    seen, states = [], []
    prepare = engine.adapter.prepare

    def checked_prepare(*args):  # a new base pass starts (after the engine dropped its own carried stream)
        gc.collect()
        assert all(r() is None for r in states), "an earlier batch's state is still alive"
        return prepare(*args)

    engine.adapter.prepare = checked_prepare
    items = sweep(engine, window_batches(ids.numpy(), mask.numpy(), 2), variants, device="cpu",
                  done=lambda b, v: (b, v.key) in done)
    for m in items:
        if m.k is None:
            states.append(weakref.ref(m.state))
        assert m.variant is (BASE if m.k is None else variants[m.k])
        torch.testing.assert_close(m.nll, want[m.index, m.k], rtol=0, atol=0, equal_nan=True)  # NaN: no next token
        assert m.batch.rows == slice(2 * m.index, min(5, 2 * m.index + 2))
        seen.append((m.index, m.k))
    key = lambda k: BASE.key if k is None else variants[k].key  # noqa: E731
    expected = [(b, k) for b in range(3) for k in (None, 0, 1, 2) if (b, key(k)) not in done]
    assert sorted(seen, key=str) == sorted(expected, key=str)
    assert len(states) == 2  # batch 1 had nothing to do: no base pass
