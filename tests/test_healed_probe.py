"""The healed protocols (the third test): zero steps, disjoint calibration text, a copied block."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from test_heal import trained_tiny
from test_perplexity import TEXT, char_tokenizer
from tiny_models import tiny_model

import swapkl.recovery.heal as heal_module
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.recovery.heal_settings import TrainText, settings_from
from swapkl.recovery.healed import materialise, run_healed_probe, select
from swapkl.recovery.healed_jobs import HealedProbeJob
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob

FAST = dict(rank=2, alpha=4.0, seq_len=16, lr=1e-3)
# probe windows and calibration text written with disjoint letters, so their token ids are disjoint
PROBE_TEXT = "\n\n".join(["abc defg hij klm " * 3] * 6)
CALIB_TEXT = "\n\n".join(["nop qrs tuv wxyz " * 3] * 6)


def _setup(tmp_path, model=None, calib=CALIB_TEXT):
    src = tmp_path / "src"
    if model is None:
        trained_tiny(src, n_layers=4, steps=20)
    else:
        model.save_pretrained(src)
        char_tokenizer().save_pretrained(src)
    (tmp_path / "probe.txt").write_text(PROBE_TEXT)
    (tmp_path / "calib.txt").write_text(calib)
    data = DataSpec(text_file=str(tmp_path / "probe.txt"), n_seqs=4, seq_len=24, min_tokens=8)
    probe = tmp_path / "probe.parquet"
    run_probe(ProbeJob(model=str(src), out=str(probe), protocols=("replacement", "interchange", "deletion"),
                       pairs="all", data=data,
                       device="cpu"))
    return src, data, probe


def _healed(tmp_path, src, data, probe, steps, fast=FAST, **kw):
    s = settings_from("demo", steps=steps, **fast)
    return run_healed_probe(HealedProbeJob(model=str(src), probe_files=[str(probe)],
                                           out=str(tmp_path / f"healed{steps}.parquet"), data=data,
                                           calibration=TrainText(text_file=str(tmp_path / "calib.txt")), settings=s,
                                           device="cpu", **kw))


def test_zero_steps_equals_the_base_protocol_exactly(tmp_path):
    src, data, probe = _setup(tmp_path)
    df = _healed(tmp_path, src, data, probe, 0, selection="all")
    base = pd.read_parquet(probe)
    assert len(df) == len(base[base["protocol"] != "base"])  # every pair both directions, interchange, deletion
    for r in df.itertuples(index=False):
        proto = r.protocol.removeprefix("healed_")
        b = base[(base["protocol"] == proto) & (base["layer_i"] == r.layer_i)
                 & ((base["layer_j"] == r.layer_j) if r.layer_j == r.layer_j and r.layer_j is not None
                    else base["layer_j"].isna())]
        assert len(b) == 1
        assert list(r.seq_kl_sum) == list(b["seq_kl_sum"].iloc[0])  # bit for bit
        assert r.kl_after == r.kl_before == b["kl_mean"].iloc[0]


def test_healing_lowers_kl_and_records_curves_and_gaps(tmp_path):
    # calibration text: the probe text's words in another order (same distribution, other windows)
    src, data, probe = _setup(tmp_path, calib="\n\n".join(["klm hij defg abc " * 3] * 6))
    df = _healed(tmp_path, src, data, probe, 10, dict(FAST, rank=4, alpha=8.0, lr=3e-3), selection="extremes",
                 k=1, curve_steps=[5])
    assert set(df["heal_steps"]) == {0, 5, 10}
    final = df[df["final"]]
    big = final[final["kl_before"] > 0.1]
    assert len(big) >= 3 and (big["kl_after"] < big["kl_before"]).mean() >= 0.7
    assert final["kl_after"].sum() < 0.9 * final["kl_before"].sum()
    pair_rows = final[final["protocol"] != "healed_deletion"]
    assert pair_rows["gap_before"].notna().all() and pair_rows["gap_after"].notna().all()
    r = final.iloc[0]
    assert r["fraction_recovered"] == pytest.approx((r["kl_before"] - r["kl_after"]) / r["kl_before"])


def test_healing_never_sees_the_probe_windows(tmp_path, monkeypatch):
    src, data, probe = _setup(tmp_path)
    seen = []
    real = heal_module.chunk_loss

    def spy(model, ids, loss, teacher=None):
        seen.append(ids.clone())
        return real(model, ids, loss, teacher)

    monkeypatch.setattr(heal_module, "chunk_loss", spy)
    _healed(tmp_path, src, data, probe, 3, selection="random", k=1)
    assert seen
    tok = char_tokenizer()
    separators = set(tok(" \n", add_special_tokens=False)["input_ids"])
    probe_ids = set(tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]) - separators  # the letters a..m
    trained = set(torch.cat(seen).reshape(-1).tolist())
    assert len(probe_ids) == 13
    assert not (trained & probe_ids)
    with pytest.raises(SwapKLError, match="must not see the probe windows"):
        run_healed_probe(HealedProbeJob(model=str(src), probe_files=[str(probe)], out=str(tmp_path / "x.parquet"),
                                        data=data,
                                        calibration=TrainText(text_file=data.text_file), settings=settings_from("demo"),
                                        device="cpu"))
    assert not (tmp_path / "x.parquet").exists()


def test_a_copied_block_is_equivalent_before_and_after_healing(tmp_path):
    model = tiny_model("llama", n_layers=4)
    model.model.layers[2] = copy.deepcopy(model.model.layers[1])
    model.model.layers[2].self_attn.layer_idx = 2
    src, data, probe = _setup(tmp_path, model)
    base = pd.read_parquet(probe)
    rep = base[(base["protocol"] == "replacement") & (base["layer_i"] == 1) & (base["layer_j"] == 2)]
    assert rep["kl_mean"].iloc[0] == pytest.approx(0.0, abs=1e-12)
    df = _healed(tmp_path, src, data, probe, 5, selection="all", protocols=("healed_replacement",))
    r = df[(df["layer_i"] == 1) & (df["layer_j"] == 2)]
    assert r["kl_before"].abs().max() <= 1e-12
    assert r["kl_after"].abs().max() <= 1e-9
    other = df[(df["layer_i"] == 0) & (df["layer_j"] == 3) & df["final"]]
    assert other["kl_before"].iloc[0] > 1e-3  # the probe can see a change elsewhere


def test_materialised_variant_equals_the_stock_forward_with_a_reordered_block_list():
    model = tiny_model("llama", n_layers=4)
    ids = torch.randint(0, 90, (2, 12), generator=torch.Generator().manual_seed(0))
    got = materialise(model, (0, 2, 1, 3))(input_ids=ids).logits
    ref = copy.deepcopy(model)
    blocks = ref.model.layers
    ref.model.layers = torch.nn.ModuleList([blocks[0], blocks[2], blocks[1], blocks[3]])
    want = ref(input_ids=ids, use_cache=False).logits
    assert torch.allclose(got, want, atol=1e-6, rtol=0)


def test_selection_extremes_and_random_are_bounded():
    rows = [dict(protocol="replacement", layer_i=i, layer_j=j, kl_mean=float(10 * i + j), n_layers=4)
            for i in range(4) for j in range(4) if i != j]
    rows += [dict(protocol="interchange", layer_i=i, layer_j=j, kl_mean=float(j - i), n_layers=4)
             for i in range(4) for j in range(i + 1, 4)]
    rows += [dict(protocol="deletion", layer_i=i, layer_j=None, kl_mean=float(i), n_layers=4) for i in range(4)]
    probe = pd.DataFrame(rows)
    pairs, blocks = select(probe, ["healed_replacement", "healed_deletion"], "extremes", 1)
    # repl max: (0,1)=10 lowest, (2,3)=32 highest; interchange: (0,1)/(1,2)/(2,3)=1 lowest (first), (0,3)=3 highest
    assert pairs == [(0, 1), (0, 3), (2, 3)] and blocks == [0, 3]
    pairs, blocks = select(probe, ["healed_interchange", "healed_deletion"], "random", 2, seed=1)
    assert len(pairs) == 2 and len(blocks) == 2 and np.all(np.diff(blocks) > 0)


def test_commands_write_the_healed_and_agreement_tables(tmp_path, capsys):
    import json

    from swapkl.cli import main

    src, data, probe = _setup(tmp_path)
    healed = tmp_path / "healed.parquet"
    rc = main(["healed-probe", "--model", str(src), "--probe-files", str(probe), "--out", str(healed),
               "--text-file", data.text_file, "--n-seqs", "4", "--seq-len", "24", "--min-tokens", "8",
               "--train-text-file", str(tmp_path / "calib.txt"), "--preset", "demo", "--steps", "2",
               "--train-seq-len", "16", "--rank", "2", "--k", "1", "--device", "cpu"])
    assert rc == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["variants"] > 0
    out = tmp_path / "agreement.parquet"
    assert main(["test-agreement", "--probe-files", str(probe), "--healed-file", str(healed), "--out", str(out),
                 "--n-boot", "20"]) == 0
    df = pd.read_parquet(out)
    assert {"healed_interchange", "healed_replacement_max"} <= set(df["test_a"]) | set(df["test_b"])
    assert df["kendall"].between(-1, 1).any()
    from swapkl.studies.healed_probes.figures import plot_healed_curves, plot_test_agreement

    plot_test_agreement(str(out), tmp_path / "map.png", tmp_path / "map.pdf")
    plot_healed_curves(str(healed), tmp_path / "curves.png", tmp_path / "curves.pdf")
    for name in ("map.png", "map.pdf", "curves.png", "curves.pdf"):
        assert (tmp_path / name).stat().st_size > 1000
