"""ShortGPT BI and Gromov angular distance against a direct computation from the stock forward.

The direct computation takes ``output_hidden_states=True`` for the streams entering blocks
0..L-1 and a forward hook on the last block for the stream *before* the final norm
(``hidden_states[-1]`` is after it).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from swapkl.data.data_spec import DataSpec
from swapkl.model.engine import ProbeEngine
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.probes.residual_stream import representation_sums
import naive_reference as ref
from tiny_models import ARCHS, random_tokens, tiny_model

L = 4


@torch.no_grad()
def direct_streams(model, ids, mask) -> list[torch.Tensor]:
    """Residual stream entering each block, plus the last block's output (pre final norm), hooked on the
    stock forward's own blocks."""
    entering, captured = [], {}
    blocks = ref.block_list(model)

    def pre(m, args, kwargs):
        entering.append(args[0] if args else kwargs["hidden_states"])

    hooks = [b.register_forward_pre_hook(pre, with_kwargs=True) for b in blocks]

    def post(m, args, out):  # returns None: the block's output goes on unchanged
        captured["h"] = out[0] if isinstance(out, tuple) else out

    hooks.append(blocks[-1].register_forward_hook(post))
    try:
        model(input_ids=ids, attention_mask=mask, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    assert len(entering) == L
    return [h.double() for h in entering] + [captured["h"].double()]


def cos(a, b):
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))


def direct_metrics(streams, mask) -> dict:
    """Token-weighted means over valid tokens, and last-valid-token means over sequences."""
    valid = mask.bool()
    lengths = mask.sum(1)
    rows = torch.arange(mask.shape[0])
    out = {}
    for l in range(L):
        c = cos(streams[l], streams[l + 1])
        out[("bi", l, 1)] = (1 - c)[valid].mean().item()
        for n in range(1, L - l + 1):
            ang = torch.arccos(cos(streams[l], streams[l + n]).clamp(-1, 1)) / math.pi
            out[("angular", l, n)] = ang[valid].mean().item()
            out[("angular_last", l, n)] = ang[rows, lengths - 1].mean().item()
    return out


def _close(a, b, what, rtol=1e-7):
    assert abs(a - b) <= rtol * abs(b) + 1e-12, f"{what}: {a} vs {b}"


@pytest.mark.parametrize("arch", ARCHS)
def test_bi_and_angular_match_direct_computation(arch):
    model = tiny_model(arch, n_layers=L)
    ids = random_tokens(97, 3, 16, seed=4)
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    mask[2, 3:] = 0
    want = direct_metrics(direct_streams(model, ids, mask), mask)
    state = ProbeEngine(model).base_pass(ids, mask)
    got = representation_sums(state.residuals, state.valid)
    assert set(got) == set(want)
    assert len([k for k in got if k[0] == "bi"]) == L
    assert len([k for k in got if k[0] == "angular"]) == L * (L + 1) // 2
    for key, (s, c) in got.items():
        _close((s.sum() / c.sum()).item(), want[key], str(key))
    # BI(l) is angular distance at width 1 through a different function of the same cosine
    for l in range(L):
        s, c = got[("angular", l, 1)]
        ang = (s.sum() / c.sum()).item()
        assert 0 < ang < 1


def test_padding_changes_nothing_for_valid_tokens():
    model = tiny_model("llama", n_layers=L)
    ids = random_tokens(97, 2, 12, seed=6)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    a = representation_sums(ProbeEngine(model).base_pass(ids, mask).residuals, mask.bool())
    alone = ids[1:2, :5]
    b = representation_sums(ProbeEngine(model).base_pass(alone, torch.ones_like(alone)).residuals,
                            torch.ones_like(alone).bool())
    for key in a:
        s1, c1 = a[key]
        s2, c2 = b[key]
        assert c1[1].item() == c2[0].item()
        _close(s1[1].item(), s2[0].item(), str(key), rtol=1e-5)  # float32 forwards of other shapes


def test_repr_out_file_matches_direct_computation(tmp_path):
    model = tiny_model("gpt_neox", n_layers=L)
    model.save_pretrained(tmp_path / "ckpt")
    ids = random_tokens(97, 4, 10, seed=8)
    np.save(tmp_path / "tokens.npy", ids.numpy())
    run_probe(ProbeJob(model=str(tmp_path / "ckpt"), out=str(tmp_path / "probe.parquet"), protocols=["deletion"],
                       pairs="adjacent",
                       data=DataSpec(tokens=str(tmp_path / "tokens.npy")), device="cpu", batch_size=3,
                       repr_out=str(tmp_path / "repr.parquet")))
    want = direct_metrics(direct_streams(model, ids, torch.ones_like(ids)), torch.ones_like(ids))
    df = pq.read_table(tmp_path / "repr.parquet").to_pandas()
    assert len(df) == len(want)
    for r in df.itertuples():
        _close(r.value, want[(r.metric, r.layer_i, r.width)], f"{r.metric} {r.layer_i} {r.width}")
        # the per-sequence sums (the aggregate bootstraps them) make up the value
        assert r.value == pytest.approx(np.sum(r.seq_value_sum) / np.sum(r.seq_count), rel=1e-12)
        assert r.n_seqs == 4 and len(r.seq_value_sum) == 4 and int(np.sum(r.seq_count)) == r.n_tokens
        assert r.n_tokens == (4 if r.metric == "angular_last" else 40)
