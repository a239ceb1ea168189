"""The pruning guides added to the registry, each against a direct computation: beam search vs
brute force on a synthetic cost table, linear CKA vs the token-Gram (HSIC) formula on
output_hidden_states, first-order Taylor vs a central finite difference, averaged blocks vs a
stock model whose ModuleList holds the averaged block; and the registry itself."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from swapkl.pruning.beam import beam_search
from swapkl.probes.cka import block_cka
from swapkl.data.windows import Windows
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.guides import get_guide, guide_names, register_guide, registered
from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.laco import laco_pairs
from swapkl.figures.guide_style import BLACK, FAMILY_COLOURS, guide_look, plotted_looks
from swapkl.pruning.guides.guide_registry import FAMILIES
from swapkl.model.merge import averaged_block, merged_blocks
from swapkl.model.variant import Variant
from swapkl.pruning.taylor import taylor_importance
from test_perplexity import stock_drop
from tiny_models import random_tokens, tiny_model

N_LAYERS = 5


def _windows() -> Windows:
    ids = random_tokens(97, 4, 12, seed=31).numpy()
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    return Windows(ids, mask, "test")


# ------------------------------------------------------------------------------------------ registry


def test_unlisted_guide_gets_a_look_of_its_own(monkeypatch):
    """A guide without an entry in guide_style.LOOKS (a new guide module) is drawn in its family's colour with a
    marker that no listed guide of its family uses, so adding a guide needs no figure code."""
    import swapkl.figures.guide_style as style
    monkeypatch.delitem(style.LOOKS, "cka")
    monkeypatch.delitem(style.LOOKS, "angular")
    cka, angular = guide_look("cka"), guide_look("angular")
    assert cka.colour == angular.colour == FAMILY_COLOURS["representation"]
    family = {style.LOOKS[g.name][1] for g in registered() if g.family == "representation" and g.name in style.LOOKS}
    assert cka.marker not in family and angular.marker not in family and cka.marker != angular.marker
    looks = plotted_looks()
    assert len({(look.colour, look.marker) for look in looks.values()}) == len(looks)


def test_registry_order_and_styles():
    names = guide_names()
    assert names[0] == "base" and names[-2:] == ["random", "random_mean"]
    for g in ("sleb_greedy", "cka", "taylor", "laco", "beam"):
        assert g in names and names.index("sleb_iterative") < names.index(g) < names.index("random")
    looks = plotted_looks()
    assert list(looks) == [g.name for g in registered() if g.plotted]
    assert len({(look.colour, look.marker) for look in looks.values()}) == len(looks), "two plotted guides look alike"
    # a figure of points (the domain slices') draws the reference rows too, and shows no line style: the unpruned
    # base and the random draws' mean were both black circles there
    every = {g.name: guide_look(g.name) for g in registered()}
    assert len({(look.colour, look.marker) for look in every.values()}) == len(every), "two guides look alike"
    assert set(FAMILY_COLOURS) == set(FAMILIES), "every guide family has a colour, and only they"
    for g in registered():
        assert guide_look(g.name).colour == ("black" if g.name in BLACK else FAMILY_COLOURS[g.family]), g.name
    with pytest.raises(TypeError):  # the registry records no look: that is the figures' (guide_style)
        register_guide("new", None, rank=12347, label="x", family="control", marker="o")
    with pytest.raises(ValueError, match="registered twice"):
        register_guide("bi", lambda ctx: None, rank=12345, label="x", family="representation")
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        register_guide("new", None, rank=12346, label="x", family="nope")
    with pytest.raises(ValueError, match="derived row"):
        get_guide("random_mean").select(None)
    with pytest.raises(Exception, match="unknown guide 'nope'"):
        get_guide("nope")


# ------------------------------------------------------------------------------------------ beam


def _table_cost(unary, pair):
    def cost(sets):
        return [sum(unary[i] for i in s) + sum(pair.get((a, b), 0.0) for a, b in itertools.combinations(s, 2))
                for s in sets]
    return cost


def test_beam_finds_the_optimum_that_greedy_misses():
    # layer 0 is the cheapest single removal but costly in every pair; {1, 2} is the best pair
    unary = [0.0, 1.0, 1.1, 3.0, 5.0]
    pair = {(0, 1): 10.0, (0, 2): 10.0, (0, 3): 10.0, (0, 4): 10.0}
    cost = _table_cost(unary, pair)
    brute = {n: min(itertools.combinations(range(5), n), key=lambda s: (cost([s])[0], s)) for n in (1, 2, 3)}
    res = beam_search(cost, 5, list(range(5)), 3, width=3)
    assert res.best == brute and res.cost[2] == pytest.approx(2.1)
    greedy = beam_search(cost, 5, list(range(5)), 2, width=1)
    assert greedy.best[2] != brute[2]  # width 1 is SLEB-like and stays with layer 0
    # distinct sets scored: 5 singles, extensions of {0}, {1}, {2}: 4 + 3 + 2 new pairs, then triples
    assert res.evals[1] == 5 and res.evals[2] == 5 + 9


def test_beam_seeds_limit_step_one_and_sets_are_scored_once():
    calls = []

    def cost(sets):
        calls.extend(sets)
        return [float(sum(s)) for s in sets]

    res = beam_search(cost, 6, [3, 4], 2, width=2)
    assert res.best[1] == (3,) and calls[:2] == [(3,), (4,)]
    assert len(calls) == len(set(calls)) == res.evals[2]


# ------------------------------------------------------------------------------------------ CKA


def _hsic_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA through token Gram matrices: HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))."""
    n = x.shape[0]
    h = np.eye(n) - 1.0 / n
    k, l = h @ x @ x.T @ h, h @ y @ y.T @ h
    return float((k * l).sum() / np.sqrt((k * k).sum() * (l * l).sum()))


@pytest.mark.parametrize("arch", ["gpt_neox", "llama"])
def test_block_cka_matches_token_gram_formula(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=4)
    w = _windows()
    got = block_cka(ProbeEngine(model), w, batch_size=3)
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    with torch.no_grad():
        hs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False).hidden_states
    valid = mask.bool()
    # hidden_states[-1] has the final norm applied; the stream leaving the last block is the engine's
    streams = [h[valid].double().numpy() for h in hs[:-1]]
    eng = ProbeEngine(model).base_pass(ids, mask)
    streams.append(eng.residuals[-1][valid].double().numpy())
    # float64 throughout on both sides; the accumulated-moment form loses about n * eps * (mean/sd)^2
    want = [_hsic_cka(streams[l], streams[l + 1]) for l in range(N_LAYERS)]
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_cka_of_a_block_that_copies_its_input_is_one():
    model = tiny_model("llama", n_layers=N_LAYERS, seed=4)
    with torch.no_grad():  # block 2 adds nothing to the residual stream: output = input
        model.model.layers[2].self_attn.o_proj.weight.zero_()
        model.model.layers[2].mlp.down_proj.weight.zero_()
    got = block_cka(ProbeEngine(model), _windows())
    assert got[2] == pytest.approx(1.0, abs=1e-12) and (got[[0, 1, 3, 4]] < 1 - 1e-6).all()


# ------------------------------------------------------------------------------------------ Taylor


def _mean_nll(model, w: Windows) -> float:
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=ids, attention_mask=mask, use_cache=False).logits.double()[:, :-1], -1)
    keep = (mask[:, :-1] * mask[:, 1:]).bool()
    return float(-lp.gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)[keep].mean())


def test_taylor_matches_finite_difference():
    # GPT-NeoX runs entirely in float64 once converted (Llama-family RMSNorms cast to float32 inside,
    # which would put ~1e-7 * L of rounding into each side of the difference)
    model = tiny_model("gpt_neox", n_layers=N_LAYERS, seed=6).double()
    w = _windows()
    got = taylor_importance(model, model.gpt_neox.layers, w, batch_size=3)
    assert all(p.requires_grad for p in model.parameters()), "requires_grad was not restored"
    eps = 1e-5  # central difference of d/dt L(theta_b * (1 + t)) at t = 0 = sum theta * dL/dtheta
    for b in range(N_LAYERS):
        m = copy.deepcopy(model)
        blk = m.gpt_neox.layers[b]
        orig = [p.detach().clone() for p in blk.parameters()]
        nll = []
        for t in (eps, -eps):
            with torch.no_grad():
                for p, o in zip(blk.parameters(), orig):
                    p.copy_(o * (1 + t))
            nll.append(_mean_nll(m, w))
        # truncation eps^2 / 6 * L''' ~ 1e-11, rounding ~ 1e-16 * L / eps ~ 1e-11; |T| >~ 1e-4 here
        assert got[b] == pytest.approx(abs(nll[0] - nll[1]) / (2 * eps), rel=1e-6, abs=1e-9)


def test_taylor_matches_full_backward_on_grouped_query_attention():
    model = tiny_model("qwen3", n_layers=N_LAYERS, seed=6).double()
    w = _windows()
    got = taylor_importance(model, model.model.layers, w, batch_size=3)
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    lp = torch.log_softmax(model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, :-1], -1)
    keep = (mask[:, :-1] * mask[:, 1:]).bool()
    (-lp.gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)[keep].mean()).backward()
    want = [abs(sum(float((p.detach() * p.grad).sum()) for p in blk.parameters())) for blk in model.model.layers]
    model.zero_grad()
    # one batch vs two (batch_size 3 of 4 windows) and per-parameter vs per-block summation: float64
    # reassociation only, ~1e-16 relative per term over terms of similar size
    np.testing.assert_allclose(got, want, rtol=1e-9)


# ------------------------------------------------------------------------------------------ merge / LaCo


def _stock_merged(model, a: int) -> torch.nn.Module:
    """A copy whose block a holds the state-dict average of blocks a and a + 1, block a + 1 dropped."""
    m = copy.deepcopy(model)
    layers = m.gpt_neox.layers if m.config.model_type == "gpt_neox" else m.model.layers
    sa, sb = layers[a].state_dict(), layers[a + 1].state_dict()
    layers[a].load_state_dict({k: (sa[k] + sb[k]) / 2 for k in sa})
    return stock_drop(m, [a + 1])


@pytest.mark.parametrize("arch", ["gpt_neox", "llama", "mistral"])
def test_merged_variant_equals_stock_model_with_averaged_block(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=7)
    w = _windows()
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    eng = ProbeEngine(model)
    n_params = sum(p.numel() for p in model.parameters())
    with merged_blocks(eng, [(1, 2)]) as ids_of:
        order = tuple(ids_of[(1, 2)] if b == 1 else b for b in range(N_LAYERS) if b != 2)
        state = eng.base_pass(ids, mask)
        h = eng.final_hidden(state, Variant("pruned", None, None, order))
    assert not eng.adapter.extra_blocks, "the averaged block was not freed"
    assert sum(p.numel() for p in model.parameters()) == n_params
    with torch.no_grad():
        ref = _stock_merged(model, 1)(input_ids=ids, attention_mask=mask, use_cache=False).logits
    with torch.inference_mode():
        logits = model.get_output_embeddings()(eng.adapter.final_norm(h))
    valid = mask.bool()
    # float32, same operations in the same order: equal up to reassociation in the fused kernels
    torch.testing.assert_close(logits[valid], ref[valid], rtol=1e-5, atol=1e-5)


def test_averaging_a_block_with_itself_gives_the_block():
    model = tiny_model("llama", n_layers=N_LAYERS, seed=8)
    blk = model.model.layers[3]
    avg = averaged_block(blk, blk)
    for (n, p), q in zip(avg.named_parameters(), blk.parameters()):
        assert torch.equal(p, q), n
    assert avg is not blk and all(p.data_ptr() != q.data_ptr() for p, q in zip(avg.parameters(), blk.parameters()))


def test_laco_pairs_take_disjoint_adjacent_pairs_by_kl():
    kl = {(0, 1): 0.5, (1, 2): 0.1, (2, 3): 0.2, (3, 4): 0.3}
    assert laco_pairs(kl, 1) == [(1, 2)]
    assert laco_pairs(kl, 2) == [(1, 2), (3, 4)]  # (2, 3) shares block 2
    assert laco_pairs(kl, 3) is None
    probe = pd.DataFrame([("interchange", i, i + 1, v) for (i, _), v in kl.items()],
                         columns=["protocol", "layer_i", "layer_j", "kl_mean"])
    sel = get_guide("laco").select(GuideContext(probe, None, 5, [1, 2, 3], 0))
    assert sel.removed[(2, None)].removed == (2, 4) and sel.removed[(2, None)].merged == (1, 3)
    assert sel.removed[(3, None)] is None


# ------------------------------------------------------------------------------------------ accuracy-guided


def _greedy_windows(model, n_seqs=4, prompt=3, length=16) -> Windows:
    """Windows the full model continues greedily: its next-token accuracy is high and deletions lower it by
    different amounts, so the brute force below is not decided by ties alone."""
    ids = random_tokens(97, n_seqs, prompt, seed=41)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=length - prompt,
                             do_sample=False, pad_token_id=0)
    return Windows(out.numpy(), np.ones_like(out.numpy()), "greedy")


@torch.no_grad()
def _stock_accuracy(model, windows, removed):
    """Next-token accuracy of the stock forward with the ``removed`` blocks taken out of its ModuleList,
    and the smallest gap between the two largest logits (an argmax decided by rounding would show there)."""
    ids = torch.from_numpy(windows.input_ids)
    z = stock_drop(model, list(removed))(input_ids=ids, use_cache=False).logits[:, :-1].double()
    top2 = z.topk(2, dim=-1).values
    return float((z.argmax(-1) == ids[:, 1:]).double().mean()), float((top2[..., 0] - top2[..., 1]).min())


def test_accuracy_guided_guide_matches_a_brute_force_on_the_stock_forward():
    """Greedy removal by calibration next-token accuracy, every candidate scored on a stock model without
    its blocks. Float32 logits differ between the engine and the stock forward by rounding only (~1e-6
    relative, see tests/float32_bounds.py); a position whose top-2 logit gap exceeds 1e-4 therefore has
    the same argmax in both, which the brute force asserts for every position it scores."""
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=97, seed=4)
    calib = _greedy_windows(model)
    ctx = GuideContext(pd.DataFrame(columns=["protocol", "layer_i", "layer_j", "kl_mean"]), None, N_LAYERS,
                       [1, 2, 3], 0, engine=ProbeEngine(model), calib=calib, batch_size=3)
    sel = get_guide("accuracy_iterative").select(ctx)
    base, _ = _stock_accuracy(model, calib, ())
    removed: tuple[int, ...] = ()
    distinct = set()
    for n in (1, 2, 3):
        scored = {b: _stock_accuracy(model, calib, removed + (b,)) for b in range(N_LAYERS) if b not in removed}
        assert min(gap for _, gap in scored.values()) > 1e-4
        acc = {b: a for b, (a, _) in scored.items()}
        distinct |= {len(set(acc.values())) > 1}
        if n == 1:
            want = np.array([base - acc[b] for b in range(N_LAYERS)])
            np.testing.assert_array_equal(sel.scores["accuracy_single"], want)
        best = max(acc.values())
        removed = tuple(sorted(removed + (min(b for b, a in acc.items() if a == best),)))
        assert sel.removed[(n, None)].removed == removed
        assert sel.n_evals[(n, None)] == sum(N_LAYERS - k for k in range(n))
    assert distinct == {True}, "every step's candidates tie: the check would not tell guides apart"


def test_every_guide_names_a_function_of_the_guides_folder_and_the_registry_imports_no_numpy():
    """Each guide that chooses blocks names a function (``"module:function"``) that exists in a module of the
    guides' folder, each derived row names none; importing the registry and reading it imports neither numpy nor
    pandas (the workflow's config reads it where Snakemake runs)."""
    import importlib
    import subprocess
    import sys

    for g in registered():
        if g.name in ("base", "random_mean"):
            assert not g.chooses, g.name
            continue
        module, name = g.function.split(":")
        assert module.startswith("swapkl.pruning.guides.") and callable(getattr(importlib.import_module(module), name))
    code = ("import sys; from swapkl.pruning.guides import registered; [g.chooses for g in registered()]; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
