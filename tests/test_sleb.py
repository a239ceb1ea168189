"""SLEB-iterative against brute force with the stock forward (blocks dropped from the ModuleList)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from swapkl.data.windows import Windows
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.pruning.sleb import sleb_iterative
from test_perplexity import stock_drop
from tiny_models import random_tokens, tiny_model

N_LAYERS = 5


def _windows() -> Windows:
    ids = random_tokens(97, 5, 16, seed=11).numpy()
    mask = np.ones_like(ids)
    mask[1, 10:] = 0
    mask[3, 6:] = 0
    return Windows(ids, mask, "test")


@torch.no_grad()
def brute_nll(model, w: Windows, removed) -> float:
    """Token-weighted mean next-token NLL over valid positions that have a valid next token."""
    m = stock_drop(model, removed)
    ids, mask = torch.from_numpy(w.input_ids), torch.from_numpy(w.attention_mask)
    logits = m(input_ids=ids, attention_mask=mask, use_cache=False).logits.double()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)
    keep = (mask[:, :-1] * mask[:, 1:]).bool()
    return float(-lp[keep].sum() / keep.sum())


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_sleb_single_step_equals_brute_force(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=2)
    w = _windows()
    res = sleb_iterative(ProbeEngine(model), w, 1, batch_size=2)
    brute = {b: brute_nll(model, w, [b]) for b in range(N_LAYERS)}
    for b in range(N_LAYERS):
        assert res.step_scores[0][b] == pytest.approx(brute[b], rel=1e-6)
    assert res.removed(1) == [min(brute, key=lambda b: (brute[b], b))]
    assert res.base_nll == pytest.approx(brute_nll(model, w, []), rel=1e-6)
    inc = res.single_removal_increase(N_LAYERS)
    np.testing.assert_allclose(inc, [brute[b] - res.base_nll for b in range(N_LAYERS)], rtol=1e-5)


def test_sleb_iterative_rescores_after_each_removal():
    model = tiny_model("gpt_neox", n_layers=N_LAYERS, seed=3)
    w = _windows()
    res = sleb_iterative(ProbeEngine(model), w, 2, batch_size=4)
    first = res.order[0]
    second = {b: brute_nll(model, w, [first, b]) for b in range(N_LAYERS) if b != first}
    assert set(res.step_scores[1]) == set(second)
    for b, v in second.items():
        assert res.step_scores[1][b] == pytest.approx(v, rel=1e-6)
    assert res.order[1] == min(second, key=lambda b: (second[b], b))
    assert res.removed(2) == sorted(res.order) and res.removed(1) == [first]


def test_sleb_budget_must_leave_a_block():
    with pytest.raises(SwapKLError, match="SLEB budget 5"):
        sleb_iterative(ProbeEngine(tiny_model("llama", n_layers=N_LAYERS)), _windows(), 5)
