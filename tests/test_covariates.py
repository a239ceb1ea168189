"""Each covariate of swapkl.probes.covariates against a direct computation on tiny models of every architecture.

The direct computation shares no code with swapkl: streams come from the stock transformers forward over
a reordered ``nn.ModuleList`` (tests/naive_reference.py) with a forward hook on the last block (its
output before the final norm), attention probabilities from the stock ``output_attentions=True``, weight
distances from the model's ``state_dict`` in numpy float64, and every mean is written out over the valid
tokens of a padded batch.

Tolerance analysis. Both sides run the same float32 modules on the same tokens in eager attention; they
differ only in batch shapes (swapkl runs two windows per batch, the reference three), so matmul kernels may
block and round differently. tests/test_engine.py bounds the resulting relative error of a stream vector
by DELTA = 1e-5 (random-walk estimate ~1e-6 through 5 blocks of width 32; measured <= 1.1e-6 on the ATen
default, AVX2 and AVX-512 paths). Each covariate turns that into its own bound, computed from the
reference's tensors:

* an update ``f = h_out - h_in`` has relative error <= DELTA * kappa with
  ``kappa = (||h_in|| + ||h_out||) / ||f||`` (cancellation), per token;
* ``rel_update = ||f|| / ||h_in||``: relative error <= DELTA * (kappa + 1);
* ``update_cos``: a cosine moves by at most 2 * (relative error of each vector) summed over both vectors,
  an absolute error <= 2 * DELTA * (kappa_a + kappa_b);
* ``commutator = ||A - B|| / ||A||``: like an update, relative error <= DELTA * ((||A|| + ||B||) /
  ||A - B|| + 1);
* ``attn_entropy``: with logits s, ``dp_k = p_k (ds_k - sum p ds)``, so ``|dH| <= 2 max|ds| * H``; logits
  are differences of dot products of q and k, with error <= DELTA * S where S is the spread of the row's
  logits over its keys (``max log p - min log p``, read from the reference probabilities), so
  ``|dH| <= 2 * DELTA * S * H``;
* ``weight_dist`` reads the same float32 parameters; only float64 summation order differs (~1e-15).

A token mean inherits the largest per-token bound. The bounds are 1e-5..1e-3 here, while a wrong slot,
input, mask or padding treatment changes the covariates by 1e-2 or more (checked below).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from swapkl.probes.covariates import eager_attention, measure, run_covariates
from swapkl.data.data_spec import DataSpec
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.tables.schemas import COVARIATE_COLUMNS
import naive_reference as ref
from tiny_models import ARCHS, random_tokens, tiny_model

L = 4
VOCAB = 97
DELTA = 1e-5
PAIRS = [(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]


def _batch():
    ids = random_tokens(VOCAB, 3, 12, seed=5)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 4:] = 0
    return ids, mask


@torch.no_grad()
def stream_after(model, order, ids, mask) -> torch.Tensor:
    """Stream leaving the last slot of the stock forward over blocks ``order`` (float64, pre final norm)."""
    got = []
    last = ref.block_list(model)[order[-1]]
    assert order.count(order[-1]) == 1
    hook = last.register_forward_hook(lambda m, a, o: got.append(o[0] if isinstance(o, tuple) else o))
    try:
        ref.logits(model, ids, mask, order)
    finally:
        hook.remove()
    assert len(got) == 1
    return got[0].double()


def _norm(x):
    return x.norm(dim=-1)


def _cos(a, b):
    return (a * b).sum(-1) / (_norm(a) * _norm(b))


class Direct:
    """Per-token values and their float32 error bounds, straight from the stock forward."""

    def __init__(self, model, ids, mask):
        self.model, self.ids, self.mask = model, ids, mask
        self.valid = mask.bool()
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True,
                        use_cache=False)
        self.h = [x.double() for x in out.hidden_states[:L]] + [stream_after(model, list(range(L)), ids, mask)]
        self.attn = [a.double() for a in out.attentions]

    def mean(self, x):
        return float(x[self.valid].mean())

    def bound(self, x):
        return float(x[self.valid].max())

    def update(self, block, slot):
        """Update of ``block`` run at ``slot`` on the base stream entering ``slot``, and its kappa."""
        h_in = self.h[slot]
        h_out = self.h[slot + 1] if block == slot else stream_after(self.model, list(range(slot)) + [block],
                                                                      self.ids, self.mask)
        f = h_out - h_in
        return f, (_norm(h_in) + _norm(h_out)) / _norm(f)

    def rel_update(self, b):
        f, kappa = self.update(b, b)
        v = _norm(f) / _norm(self.h[b])
        return self.mean(v), DELTA * self.bound(v * (kappa + 1))

    def entropy(self, b):
        p = self.attn[b]
        logp = torch.where(p > 0, p.log(), torch.zeros_like(p))
        h_row = -(p * logp).sum(-1)  # [B, H, T]
        spread = torch.where(p > 0, logp, torch.full_like(p, np.inf)).amin(-1).neg().add(logp.amax(-1))
        return self.mean(h_row.mean(1)), 2 * DELTA * self.bound((spread * h_row).amax(1))

    def update_cos(self, i, j):
        fi, ki = self.update(i, i)
        fj, kj = self.update(j, i)
        return self.mean(_cos(fi, fj)), 2 * DELTA * self.bound(ki + kj)

    def commutator(self, i, j):
        a = stream_after(self.model, list(range(i)) + [i, j], self.ids, self.mask)
        b = stream_after(self.model, list(range(i)) + [j, i], self.ids, self.mask)
        v = _norm(a - b) / _norm(a)
        return self.mean(v), DELTA * self.bound(v * ((_norm(a) + _norm(b)) / _norm(a - b) + 1))

    def weight_dist(self, i, j):
        """From the model's state_dict: every tensor under ``<blocks>.<b>.`` (the first numbered key part)."""
        per_block = {}
        for key, t in self.model.state_dict().items():
            m = re.fullmatch(r"[^0-9]*?\.(\d+)\.(.+)", key)
            if m:
                per_block.setdefault(int(m.group(1)), {})[m.group(2)] = t.detach().double().numpy().ravel()
        names = sorted(per_block[i])
        assert names == sorted(per_block[j]) and names
        wi = np.concatenate([per_block[i][n] for n in names])
        wj = np.concatenate([per_block[j][n] for n in names])
        return np.linalg.norm(wi - wj) / ((np.linalg.norm(wi) + np.linalg.norm(wj)) / 2), 1e-12


def _check(got: float, want_tol: tuple[float, float], what: str) -> None:
    want, tol = want_tol
    assert np.isfinite(got) and abs(got - want) <= tol, f"{what}: {got} vs direct {want} (allowed {tol:.3g})"


@pytest.mark.parametrize("arch", ARCHS)
def test_covariates_match_direct_computation(arch):
    model = tiny_model(arch, n_layers=L)
    ids, mask = _batch()
    before = model.config._attn_implementation  # "eager" only for BLOOM, whose attention has no other kernel
    rows = {(r["layer_i"], r["layer_j"]): r for r in measure(ProbeEngine(model), ids, mask, PAIRS, batch_size=2)}
    assert model.config._attn_implementation == before  # measure restores the model's attention
    model.set_attn_implementation("eager")  # the stock forward returns probabilities only in eager attention
    d = Direct(model, ids, mask)
    assert sorted(rows) == sorted(PAIRS)
    for (i, j), r in rows.items():
        assert r["distance"] == j - i and r["n_seqs"] == 3 and r["n_tokens"] == int(mask.sum())
        for side, b in (("i", i), ("j", j)):
            _check(r[f"rel_update_{side}"], d.rel_update(b), f"{arch} rel_update {b}")
            _check(r[f"attn_entropy_{side}"], d.entropy(b), f"{arch} attn_entropy {b}")
        _check(r["update_cos"], d.update_cos(i, j), f"{arch} update_cos {i},{j}")
        _check(r["commutator"], d.commutator(i, j), f"{arch} commutator {i},{j}")
        _check(r["weight_dist"], d.weight_dist(i, j), f"{arch} weight_dist {i},{j}")
        # the pair summaries are the stated functions of the two blocks' values
        for name in ("rel_update", "attn_entropy"):
            a, b = r[f"{name}_i"], r[f"{name}_j"]
            assert r[f"{name}_mean"] == pytest.approx((a + b) / 2, rel=1e-15)
            assert r[f"{name}_absdiff"] == pytest.approx(abs(a - b), rel=1e-15)
        assert set(COVARIATE_COLUMNS) <= set(r)


def test_bounds_are_tight_enough_to_catch_a_wrong_definition():
    """Padding counted as tokens, or block j's update taken on its own input instead of slot i's, moves
    the covariates far beyond the tolerances above."""
    model = tiny_model("llama", n_layers=L)
    ids, mask = _batch()
    model.set_attn_implementation("eager")
    d = Direct(model, ids, mask)
    want, tol = d.rel_update(1)
    everywhere = float((_norm(d.h[2] - d.h[1]) / _norm(d.h[1])).mean())  # padding included
    assert abs(everywhere - want) > 100 * tol
    fi, _ = d.update(1, 1)
    fj_own, _ = d.update(3, 3)
    want, tol = d.update_cos(1, 3)
    assert abs(d.mean(_cos(fi, fj_own)) - want) > 100 * tol


def test_run_covariates_writes_one_row_per_pair(tmp_path):
    model = tiny_model("gpt_neox", n_layers=L)
    model.save_pretrained(tmp_path / "ckpt")
    ids = random_tokens(VOCAB, 4, 10, seed=8)
    np.save(tmp_path / "tokens.npy", ids.numpy())
    out = tmp_path / "cov.parquet"
    run_covariates(str(tmp_path / "ckpt"), str(out), pairs="within:2", data=DataSpec(tokens=str(tmp_path / "tokens.npy")),
                   device="cpu", batch_size=3, metadata={"model": "toy", "revision": "step7"})
    df = pq.read_table(out).to_pandas()
    assert list(zip(df["layer_i"], df["layer_j"])) == [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
    assert (df["model"] == "toy").all() and (df["revision"] == "step7").all() and (df["step"] == 7).all()
    assert (df["n_tokens"] == 40).all() and (df["n_layers"] == L).all()
    want = measure(ProbeEngine(model), ids, torch.ones_like(ids), list(zip(df["layer_i"], df["layer_j"])),
                   batch_size=4)
    for r, w in zip(df.to_dict("records"), want):
        for c in COVARIATE_COLUMNS:  # float32 forwards of other batch shapes: the stream bound DELTA, amplified
            assert r[c] == pytest.approx(w[c], rel=1e-3, abs=1e-6), c


def test_bad_inputs_fail_before_writing(tmp_path):
    model = tiny_model("llama", n_layers=1)
    model.save_pretrained(tmp_path / "ckpt")
    np.save(tmp_path / "tokens.npy", random_tokens(VOCAB, 2, 8).numpy())
    out = tmp_path / "cov.parquet"
    with pytest.raises(SwapKLError, match="holds no pair"):
        run_covariates(str(tmp_path / "ckpt"), str(out), pairs="adjacent",
                       data=DataSpec(tokens=str(tmp_path / "tokens.npy")), device="cpu")
    with pytest.raises(SwapKLError, match="unknown pair set"):
        run_covariates(str(tmp_path / "ckpt"), str(out), pairs="nearby",
                       data=DataSpec(tokens=str(tmp_path / "tokens.npy")), device="cpu")
    assert not out.exists()
    with pytest.raises(SwapKLError, match=r"pair \(0, 1\) is not i < j"):
        measure(ProbeEngine(model), *_batch(), [(0, 1)])


def test_eager_attention_is_restored_after_an_error():
    model = tiny_model("qwen3", n_layers=L)
    before = model.config._attn_implementation
    with pytest.raises(RuntimeError):
        with eager_attention(model):
            assert model.config._attn_implementation == "eager"
            raise RuntimeError("boom")
    assert model.config._attn_implementation == before != "eager"
