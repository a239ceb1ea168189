"""The position-encoding ablation: architecture-matched models (swapkl.demo.architectures), their probes
against the stock forward on a reordered block list, the trainer, results/pe_ablation.parquet against a hand
computation from the probe outputs, and the config block."""

from __future__ import annotations

import statistics

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import naive_reference as ref
from direct_config import refusal, validated
from swapkl.adapters import ADAPTERS
from swapkl.studies.pe_ablation.models import pe_models, pe_train_settings
from swapkl.config.study_plan import StudyPlan
from swapkl.demo.architectures import DemoSize, PE_FAMILIES, matched_config, matched_init, matched_model
from swapkl.demo.train import train_demo_model
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.probes.aggregate_inputs import read_probe_file
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.probes.protocols import build_variants
from swapkl.studies.pe_ablation.summary import build_pe_ablation
from swapkl.tables.provenance import read as read_provenance
from test_demo import corpus, mini_corpus, tokenizer_dir  # noqa: F401 (fixtures: the demo corpus and tokenizer)
from test_engine import RTOL, _assert_close, _padded_batch

ENCODINGS = tuple(PE_FAMILIES)
SIZE = DemoSize(num_layers=5, hidden_size=32, num_heads=4, num_kv_heads=4, intermediate_size=128,
                max_position_embeddings=64)
IDS = dict(vocab_size=97, eos_token_id=0, pad_token_id=1)


def _block_shapes(model) -> list[list[tuple]]:
    return [[tuple(p.shape) for p in block.parameters()] for block in ref.block_list(model)]


def test_matched_models_differ_only_in_position_encoding():
    models = {pe: matched_model(matched_config(pe, SIZE, **IDS), seed=7) for pe in ENCODINGS}
    for pe, model in models.items():
        assert ADAPTERS[model.config.model_type].position_encoding == pe
        assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # tied
        assert not any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
    rope = models["rope"].config
    assert rope.use_parallel_residual is False and rope.rope_parameters["partial_rotary_factor"] == 1.0
    assert rope.hidden_act == models["learned"].config.activation_function == "gelu_new"
    # the blocks hold the same parameters; outside them, GPT-2's position table and BLOOM's embedding LayerNorm
    shapes = {pe: _block_shapes(m) for pe, m in models.items()}
    counts = {pe: [sum(int(np.prod(s)) for s in block) for block in blocks] for pe, blocks in shapes.items()}
    assert counts["rope"] == counts["learned"] == counts["alibi"] and len(counts["rope"]) == 5
    total = {pe: sum(p.numel() for p in m.parameters()) for pe, m in models.items()}
    assert total["learned"] - total["rope"] == 64 * 32  # wpe: max_position_embeddings x hidden
    assert total["alibi"] - total["rope"] == 2 * 32  # word_embeddings_layernorm
    # one seed, one initialisation rule: the token embeddings (drawn first) are identical
    emb = [models[pe].get_input_embeddings().weight for pe in ENCODINGS]
    assert torch.equal(emb[0], emb[1]) and torch.equal(emb[0], emb[2])
    assert float(emb[0].detach().std()) == pytest.approx(0.02, rel=0.1)


@pytest.mark.parametrize("bad, message", [
    (dict(position_encoding="nope"), "unknown position encoding"),
    (dict(size=DemoSize(num_layers=3, hidden_size=32, num_heads=4, num_kv_heads=4, intermediate_size=96)),
     "intermediate_size = 4 x hidden_size"),
])
def test_matched_config_refuses(bad, message):
    args = dict(position_encoding="rope", size=SIZE) | bad
    with pytest.raises(SwapKLError, match=message):
        matched_config(args["position_encoding"], args["size"], **IDS)


@pytest.fixture(scope="module", params=ENCODINGS)
def matched(request):
    """A matched model with large weights (std 0.3) and perturbed norms/biases, so that every swap shows."""
    model = matched_model(matched_config(request.param, SIZE, **IDS), seed=0)
    matched_init(model, seed=1, std=0.3)
    torch.manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def test_probes_on_matched_models_match_the_stock_forward(matched):
    """Every replacement and interchange variant within 3 blocks, per sequence, against the stock forward over a
    reordered nn.ModuleList (tolerance: tests/test_engine.py's analysis, same depth and width)."""
    n = SIZE.num_layers
    ids, mask = _padded_batch()
    engine = ProbeEngine(matched, chunk_tokens=7)
    state = engine.base_pass(ids, mask)
    base_logits = ref.logits(matched, ids, mask)
    seen = 0
    for v in engine.plan(build_variants(["replacement", "interchange"], "within:3", n)):
        reorder = ref.replacement_order if v.protocol == "replacement" else ref.interchange_order
        order = reorder(v.layer_i, v.layer_j, n)
        stats = engine.variant_seq_stats(state, v)
        want = ref.per_sequence(matched, ids, mask, order, base_logits)
        _assert_close(stats.kl_sum / stats.tokens, want.kl_mean, f"{v.key} per-sequence KL")
        assert want.kl_grand > 1e-3
        seen += 1
    assert seen == 2 * 9 + 9 and RTOL <= 1e-5  # pairs within 3 of 5 blocks: 4 + 3 + 2


def _hand_rows(probe_path, max_distance=3):
    """{distance: (mean I/R, median I/R, n, mean gap)} from the probe file's rows, written out directly."""
    rows = pq.read_table(probe_path).to_pandas()
    kl = {(r.protocol, int(r.layer_i), int(r.layer_j)): r.kl_mean for r in rows.itertuples() if r.protocol != "base"}
    out = {}
    for d in range(1, max_distance + 1):
        ratios, gaps = [], []
        for (proto, i, j), inter in kl.items():
            if proto == "interchange" and j - i == d:
                repl = max(kl[("replacement", i, j)], kl[("replacement", j, i)])
                ratios.append(inter / repl)
                gaps.append(repl - inter)
        out[d] = (sum(ratios) / len(ratios), statistics.median(ratios), len(ratios), sum(gaps) / len(gaps))
    return out


def test_trained_models_probed_and_summarised(mini_corpus, tokenizer_dir, tmp_path):  # noqa: F811
    from transformers import AutoModelForCausalLM

    size = DemoSize(num_layers=4, hidden_size=32, num_heads=2, num_kv_heads=2, intermediate_size=128,
                    max_position_embeddings=32)
    models = {}
    for pe in ENCODINGS:
        run = tmp_path / pe
        summary = train_demo_model("matched", mini_corpus, tokenizer_dir, run, position_encoding=pe, size=size,
                                   steps=3, save_steps=[0, 3], seed=5, batch_size=4, seq_len=32, eval_windows=4,
                                   threads=1, progress=False)
        assert summary["position_encoding"] == pe and summary["model_type"] == PE_FAMILIES[pe]
        loaded = AutoModelForCausalLM.from_pretrained(str(run / "step3"))
        assert loaded.config.model_type == PE_FAMILIES[pe] and loaded.config.num_hidden_layers == 4
        models[pe] = {"position_encoding": pe, "probe": str(tmp_path / f"{pe}.parquet"),
                      "checkpoint": str(run / "step3")}
        run_probe(ProbeJob(model=models[pe]["checkpoint"], out=models[pe]["probe"],
                           protocols=["replacement", "interchange"],
                          pairs="within:3",
                          data={"text_file": str(mini_corpus / "valid.txt"), "n_seqs": 4, "seq_len": 32},
                          metadata={"model": f"pe-{pe}-4L", "revision": "step3"}))
    step0 = [AutoModelForCausalLM.from_pretrained(str(tmp_path / pe / "step0")).get_input_embeddings().weight
             for pe in ENCODINGS]
    assert torch.equal(step0[0], step0[1]) and torch.equal(step0[0], step0[2])  # one seed, one start
    out = tmp_path / "pe_ablation.parquet"
    df = build_pe_ablation(models, out)
    assert len(df) == 9 and sorted(set(df["position_encoding"])) == sorted(ENCODINGS)
    for pe in ENCODINGS:
        hand = _hand_rows(models[pe]["probe"])
        for d in (1, 2, 3):
            row = df[(df["position_encoding"] == pe) & (df["distance"] == d)].iloc[0]
            mean, median, n, gap = hand[d]
            assert (row["n_pairs"], row["n_ratio"], row["n_layers"]) == (n, n, 4)
            assert row["ratio_ir_mean"] == pytest.approx(mean, rel=1e-12)
            assert row["ratio_ir_median"] == pytest.approx(median, rel=1e-12)
            assert row["gap_mean"] == pytest.approx(gap, rel=1e-9, abs=1e-15)
    assert read_provenance(str(out))["max_distance"] == 3
    assert pq.read_table(out).num_rows == 9
    # a label that promises another encoding than the checkpoint holds is refused, and nothing is written
    wrong = dict(models, rope={**models["rope"], "position_encoding": "alibi"})
    with pytest.raises(SwapKLError, match="not alibi"):
        build_pe_ablation(wrong, tmp_path / "wrong.parquet")
    assert not (tmp_path / "wrong.parquet").exists()
    with pytest.raises(SwapKLError, match="no pairs at distance 4"):
        build_pe_ablation(models, tmp_path / "far.parquet", max_distance=4)


def test_trainer_refuses_position_encoding_mismatches(tmp_path):
    with pytest.raises(SwapKLError, match="must be one of rope, learned, alibi"):
        train_demo_model("matched", tmp_path, tmp_path, tmp_path / "out", position_encoding=None)
    with pytest.raises(SwapKLError, match="only for matched demo models"):
        train_demo_model("llama", tmp_path, tmp_path, tmp_path / "out", position_encoding="rope")
    assert not (tmp_path / "out").exists()


def _cfg(**block) -> dict:
    return {"models": {"m": {"demo": {"arch": "llama"}, "revisions": ["step10"]}}, "pe_ablation": block}


def test_config_block_defaults_and_job_settings():
    cfg, families = validated(_cfg(enabled=True))
    block = cfg["pe_ablation"]
    assert block["encodings"] == ["rope", "learned", "alibi"] and block["depths"] == [6]
    assert block["data"]["n_seqs"] == 16 and block["data"]["min_tokens"] == 16  # nested defaults filled
    assert [unit["pe_model"] for unit in StudyPlan(cfg, families).study_units("pe_ablation")] == [
        "pe-rope-6L", "pe-learned-6L", "pe-alibi-6L"]
    settings = pe_train_settings(cfg, "pe-alibi-6L")
    assert settings["size"] == {"hidden_size": 64, "intermediate_size": 256, "max_position_embeddings": 128,
                                "num_heads": 4, "num_kv_heads": 4, "num_layers": 6}
    assert (settings["arch"], settings["position_encoding"], settings["save_steps"]) == ("matched", "alibi", [300])
    off, _ = validated(_cfg())
    assert pe_models(off) == {}


@pytest.mark.parametrize("block, message", [
    (dict(depths=[3]), "pe_ablation.depths: depth 3 has no pair at distance 3"),
    (dict(seq_len=64), "pe_ablation.data.seq_len: probe windows of 128 tokens are longer"),
    (dict(num_heads=3), "pe_ablation.num_heads"),
    (dict(encodings=["nope"]), "pe_ablation.encodings"),
])
def test_config_block_refusals(block, message):
    got = refusal(_cfg(enabled=True, **block))
    assert got is not None and message in got, got


def test_the_figure_draws_the_tables_ratios_readably(tmp_path, monkeypatch):
    """Two depths, three encodings: every solid line is a median row of the table, every dotted one a mean row,
    and the layout checks (no overlapping or clipped text, no legend over data) pass."""
    import pandas as pd

    from figure_layout import captured_figures, layout_problems, legends_cover_data
    from swapkl.studies.pe_ablation.figures import plot_pe_ablation
    from swapkl.figures.palette import PE_COLOURS

    rng = np.random.default_rng(4)
    rows = [{"position_encoding": pe, "n_layers": depth, "distance": d, "ratio_ir_median": rng.uniform(0.1, 1.5),
             "ratio_ir_mean": rng.uniform(0.1, 1.5)}
            for depth in (6, 12) for pe in ENCODINGS for d in (1, 2, 3)]
    table = pd.DataFrame(rows)
    with captured_figures(monkeypatch) as figs:
        plot_pe_ablation(table, tmp_path / "f.png", tmp_path / "f.pdf")
    fig = figs[-1]
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0
    assert not layout_problems(fig) + legends_cover_data(fig)
    axes = [ax for ax in fig.axes if ax.get_lines()]
    assert [ax.get_title() for ax in axes] == ["6 blocks", "12 blocks"]
    for ax, depth in zip(axes, (6, 12)):
        for pe in ENCODINGS:
            want = table[(table["n_layers"] == depth) & (table["position_encoding"] == pe)].sort_values("distance")
            lines = [ln for ln in ax.get_lines() if ln.get_color() == PE_COLOURS[pe]]
            solid = [ln for ln in lines if ln.get_linestyle() == "-"]
            dotted = [ln for ln in lines if ln.get_linestyle() == ":"]
            assert len(solid) == len(dotted) == 1
            np.testing.assert_allclose(solid[0].get_ydata(), want["ratio_ir_median"], rtol=0, atol=0)
            np.testing.assert_allclose(dotted[0].get_ydata(), want["ratio_ir_mean"], rtol=0, atol=0)
            np.testing.assert_allclose(np.round(solid[0].get_xdata()), want["distance"])


def test_the_final_outputs_hold_the_table_probes_and_figure_when_enabled():
    """What `rule all` asks for (swapkl.config.targets); the dry runs of tests/test_workflow_config.py count the
    jobs that make them (train_pe_model, probe_pe_model, summarise_pe_ablation, plot_pe_ablation)."""
    from swapkl.config.targets import final_outputs

    on = final_outputs(StudyPlan(*validated(_cfg(enabled=True, depths=[4, 6], encodings=["rope", "alibi"]))))
    want = {"results/pe_ablation.parquet", "results/figures/pe_ablation.png", "results/figures/pe_ablation.pdf",
            *[f"results/pe_ablation/probes/pe-{e}-{d}L.parquet" for e in ("rope", "alibi") for d in (4, 6)]}
    assert want <= set(on)
    off = final_outputs(StudyPlan(*validated(_cfg())))
    assert not [path for path in off if "pe_ablation" in path]
