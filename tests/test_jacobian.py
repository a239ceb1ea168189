"""Residual Jacobian spectral norms against the full Jacobian of a tiny model's block (float64): the exact
power iteration converges to its largest singular value; the paper's finite-difference iteration follows
the same iteration run with the full matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
from transformers import AutoModelForCausalLM

from swapkl.probes.covariates import eager_attention
from swapkl.data.data_spec import DataSpec
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.studies.jacobian.figures import block_swap_distances
from swapkl.data.windows import load_windows
from swapkl.studies.jacobian.jobs import JacobianJob
from swapkl.studies.jacobian.run import block_norms, norm_exact, norm_finite_difference, residual_update, run_jacobian
from tiny_models import random_tokens, tiny_model

T, BLOCK = 5, 1


def _setup(arch):
    model = tiny_model(arch, n_layers=3).double()
    model.set_attn_implementation("eager")  # before the masks are built: forward-mode AD needs eager attention
    engine = ProbeEngine(model)
    ids = random_tokens(97, 1, T, seed=7)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        h, ctx = engine.adapter.prepare(ids, mask)
        x = engine.adapter.run_block(0, 0, h, ctx)
    return model, engine, ctx, x


def _full_jacobian(g, x) -> torch.Tensor:
    return torch.autograd.functional.jacobian(lambda z: g(z.view(x.shape)).reshape(-1), x.reshape(-1))


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2", "bloom"])  # bloom: torch.autograd's products
def test_exact_power_iteration_finds_the_largest_singular_value(arch):
    model, engine, ctx, x = _setup(arch)
    g = residual_update(engine, BLOCK, ctx)
    s = torch.linalg.svdvals(_full_jacobian(g, x))
    # power iteration on J^T J: relative error ~ (s2/s1)^(2k); enough iterations for 1e-9 from the actual gap
    k = int(np.ceil(np.log(1e-9) / (2 * np.log((s[1] / s[0]).item())))) + 10
    assert k <= 3000, "singular values too close for a quick test"
    got = norm_exact(g, x, k, torch.Generator().manual_seed(0))
    assert got == pytest.approx(s[0].item(), rel=1e-6)


def test_finite_difference_is_the_papers_iteration():
    model, engine, ctx, x = _setup("gpt2")
    g = residual_update(engine, BLOCK, ctx)
    with torch.no_grad():
        got = norm_finite_difference(g, x, 20, 1e-6, torch.Generator().manual_seed(3))
    J = _full_jacobian(g, x)
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).reshape(-1)
    v = v / v.norm()
    for _ in range(20):
        jv = J @ v
        sigma, v = jv.norm().item(), jv / jv.norm()
    # float64 forward differences: error ~ eps * ||g''|| per product, well under 1e-4 relative here
    assert got == pytest.approx(sigma, rel=1e-4)


def test_run_jacobian_table(tmp_path):
    d = tmp_path / "ckpt"
    tiny_model("llama", n_layers=3).save_pretrained(d)
    tok = tmp_path / "tokens.npy"
    np.save(tok, random_tokens(97, 4, 6, seed=2).numpy())
    out = tmp_path / "jac.parquet"
    run_jacobian(JacobianJob(model=str(d), out=str(out), data={"tokens": str(tok)}, n_prompts=2, iterations=3,
                             seed=5, device="cpu"))
    df = pq.read_table(out).to_pandas()
    assert list(df["block"]) == [0, 1, 2] and (df["n_prompts"] == 2).all()
    assert (df["norm_min"] <= df["norm_mean"]).all() and (df["norm_mean"] <= df["norm_max"]).all()
    # the table's rows are the per-prompt estimates of block_norms (prompt p seeded seed + p), on the first 2 windows
    model = AutoModelForCausalLM.from_pretrained(d).eval()
    windows = load_windows(DataSpec(tokens=str(tok)), None)
    engine = ProbeEngine(model)
    with eager_attention(model):
        norms = np.stack([block_norms(engine, torch.from_numpy(windows.input_ids[p:p + 1]),
                                      torch.from_numpy(windows.attention_mask[p:p + 1]), method="exact",
                                      iterations=3, eps=1e-3, seed=5 + p) for p in range(2)])
    np.testing.assert_allclose(df["norm_mean"], norms.mean(0), rtol=1e-12)
    np.testing.assert_allclose(df["norm_max"], norms.max(0), rtol=1e-12)
    with pytest.raises(SwapKLError, match="method"):
        run_jacobian(JacobianJob(model=str(d), out=str(tmp_path / "x.parquet"), data=DataSpec(tokens=str(tok)),
                                 method="svd"))
    with pytest.raises(TypeError, match="JacobianJob"):
        run_jacobian(str(d))


def test_block_norms_per_block_and_swap_distances():
    model = tiny_model("gpt_neox", n_layers=3)
    engine = ProbeEngine(model)
    ids = random_tokens(97, 1, T, seed=7)
    with eager_attention(model):
        n = block_norms(engine, ids, torch.ones_like(ids), method="finite_difference", iterations=2, eps=1e-3, seed=0)
    assert n.shape == (3,) and (n > 0).all()
    pairs = pd.DataFrame({"layer_i": [0, 1, 0], "layer_j": [1, 2, 2], "distance": [1, 1, 2],
                          "d_repl_max": [0.2, 0.4, 9.0], "d_inter": [0.1, 0.3, 9.0]})
    got = block_swap_distances(pairs).set_index("block")
    assert got.loc[1, "d_repl_adjacent"] == pytest.approx(0.3) and got.loc[0, "d_inter_adjacent"] == 0.1
