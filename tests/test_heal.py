"""Healing (LoRA through PEFT, last-k full fine-tune) and the recovery table."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from peft import LoraConfig, get_peft_model
from test_perplexity import TEXT, char_tokenizer, save_tiny
from tiny_models import tiny_model
from transformers import AutoModelForCausalLM

from swapkl.cli import main
from swapkl.errors import SwapKLError
from swapkl.export import export_checkpoint
from swapkl.recovery.heal import chunk_loss, prepare_trainable, train, train_chunks
from swapkl.recovery.heal_settings import TrainText, settings_from
from swapkl.recovery.recovery_jobs import RecoveryJob
from swapkl.recovery.recovery_table import merge_tolerance, net_recovery, run_recovery, save_healed
from swapkl.export import HEAL_FILE
from swapkl.relevance.tasks import write_task

FAST = dict(rank=4, alpha=8.0, steps=30, lr=3e-3, seq_len=16, batch_size=2)


def _text_file(tmp_path, text=TEXT * 4, name="train.txt"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def trained_tiny(folder, arch="llama", n_layers=5, steps=60):
    """A tiny model fitted to TEXT (so that removing blocks hurts its perplexity), saved with the tokenizer."""
    model = tiny_model(arch, n_layers=n_layers, init=0.02)
    ids = torch.tensor([char_tokenizer()(TEXT, add_special_tokens=False)["input_ids"]])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        logits = model(input_ids=ids, use_cache=False).logits[0, :-1]
        loss = torch.nn.functional.cross_entropy(logits, ids[0, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    return model


def _chunks(tmp_path, seq_len=16):
    return train_chunks(TrainText(text_file=_text_file(tmp_path)), char_tokenizer(), seq_len)


def test_paper_preset_holds_the_published_settings():
    s = settings_from("paper")
    assert (s.method, s.rank, s.alpha, s.targets) == ("lora", 16, 32.0, ("q", "k", "v", "o"))
    assert (s.steps, s.lr, s.weight_decay, s.batch_size, s.seq_len) == (200, 2e-4, 0.01, 1, 128)


def test_chunks_are_consecutive_non_overlapping_windows(tmp_path):
    tok = char_tokenizer()
    ids = tok(TEXT * 4, add_special_tokens=False)["input_ids"]
    chunks = _chunks(tmp_path, 16)
    assert chunks.shape == (len(ids) // 16, 16)
    assert chunks.reshape(-1).tolist() == ids[: chunks.size]


@pytest.mark.parametrize("arch,method", [("llama", "lora"), ("gpt_neox", "lora"), ("gpt2", "lora"),
                                         ("llama", "last_k")])
def test_a_heal_lowers_the_training_loss(tmp_path, arch, method):
    chunks = _chunks(tmp_path)
    s = settings_from("paper", method=method, last_k=2 if method == "last_k" else None, **FAST)
    model = prepare_trainable(tiny_model(arch, n_layers=4), s)
    data = torch.as_tensor(chunks)
    with torch.no_grad():
        before = float(chunk_loss(model.eval(), data, "nll"))
    train(model, chunks, s)
    with torch.no_grad():
        after = float(chunk_loss(model.eval(), data, "nll"))
    assert after < before - 0.1, (before, after)


def test_lora_trains_only_the_adapters_of_qkvo(tmp_path):
    s = settings_from("paper", **FAST)
    model = prepare_trainable(tiny_model("llama", n_layers=3), s)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert {n.split(".")[-4] for n in names} == {"q_proj", "k_proj", "v_proj", "o_proj"}


def test_an_unknown_target_is_a_clear_error():
    with pytest.raises(SwapKLError, match="names no module"):
        prepare_trainable(tiny_model("llama", n_layers=2), settings_from("paper", targets=("query",)))


def test_merged_saved_reloaded_model_equals_the_peft_model(tmp_path):
    src = tmp_path / "src"
    save_tiny(src, "llama", n_layers=4)
    s = settings_from("paper", **FAST)
    model = prepare_trainable(AutoModelForCausalLM.from_pretrained(src), s)
    train(model, _chunks(tmp_path), s)
    ids = torch.randint(0, 30, (2, 20), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = model(input_ids=ids).logits  # PEFT's own forward with unmerged adapters
    save_healed(model, str(src), str(tmp_path / "healed"), {})
    got = AutoModelForCausalLM.from_pretrained(tmp_path / "healed")(input_ids=ids).logits.detach()
    assert (got - want).abs().max() <= merge_tolerance(torch.float32, float(want.abs().max()))
    assert (got - AutoModelForCausalLM.from_pretrained(src)(input_ids=ids).logits).abs().max() > 1e-3  # trained
    assert json.loads((tmp_path / "healed" / HEAL_FILE).read_text())["verification"]["max_abs_logit_diff"] >= 0


def test_lora_matches_an_independent_peft_setup(tmp_path):
    """Same seed, same draws: swapkl's LoRA equals a LoRA built directly with PEFT and trained by hand."""
    chunks = _chunks(tmp_path)
    s = settings_from("paper", steps=3, rank=4, alpha=8.0, lr=1e-3, seq_len=16, seed=5)
    ours = prepare_trainable(tiny_model("llama", n_layers=3), s)
    train(ours, chunks, s)
    base = tiny_model("llama", n_layers=3)
    torch.manual_seed(5)
    ref = get_peft_model(base, LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.01)
    draws = np.random.default_rng(5).integers(0, len(chunks), size=(3, 1))
    for k in range(3):
        ids = torch.as_tensor(chunks[draws[k]])
        logits = ref(input_ids=ids).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    ids = torch.as_tensor(chunks[:2])
    with torch.no_grad():
        assert torch.allclose(ours(input_ids=ids).logits, ref(input_ids=ids).logits, atol=1e-5)


def test_net_recovery_against_the_published_numbers():
    # Qwen3-8B: full 23.5335 -> 17.3328 (control); skip-1 24.1949 -> 17.5968; skip-3 26.8027 -> 19.0204
    # hand computation: 1 - (17.5968 - 17.3328) / (24.1949 - 23.5335) = 1 - 0.2640 / 0.6614 = 0.6008
    assert net_recovery(23.533506, 17.332761, 24.194897, 17.596791) == pytest.approx(0.601, abs=5e-4)
    assert net_recovery(23.533506, 17.332761, 26.802735, 19.020395) == pytest.approx(0.484, abs=5e-4)
    assert net_recovery(10.0, 8.0, 12.0, 8.0) == 1.0  # healed back to the control: all damage removed
    assert net_recovery(10.0, 8.0, 12.0, 10.0) == 0.0  # only the control's adaptation
    assert math.isnan(net_recovery(10.0, 8.0, 9.5, 8.0))  # pruning did not hurt: undefined


def test_recovery_intervals_resample_the_windows_once_for_every_phase():
    """The intervals recomputed directly: 1000 resamples of the windows (numpy's generator, seed 0), each phase's
    perplexity on the same resample, the 2.5% and 97.5% quantiles of delta PPL and of net recovery."""
    from swapkl.recovery.recovery_table import recovery_intervals

    rng = np.random.default_rng(5)
    tokens = rng.integers(20, 60, size=9).astype(np.float64)
    nll = {phase: tokens * (base + rng.normal(0, 0.05, size=9))
           for phase, base in (("base", 3.0), ("control", 2.9), ("pruned", 3.3), ("healed", 3.0))}
    rows = recovery_intervals([dict(phase=p, window_nll_sum=nll[p].tolist()) for p in nll], tokens)
    idx = np.random.default_rng(0).integers(0, 9, size=(1000, 9))
    ppl = {p: np.exp(nll[p][idx].sum(1) / tokens[idx].sum(1)) for p in nll}
    q = lambda x: tuple(np.quantile(x, [0.025, 0.975]))  # noqa: E731
    got = {r["phase"]: r for r in rows}
    assert (got["base"]["delta_ppl_pct_ci_low"], got["control"]["delta_ppl_pct_ci_high"]) == (0.0, 0.0)
    assert (got["pruned"]["delta_ppl_pct_ci_low"], got["pruned"]["delta_ppl_pct_ci_high"]) == pytest.approx(
        q(100 * (ppl["pruned"] / ppl["base"] - 1)), rel=1e-12)
    assert (got["healed"]["delta_ppl_pct_ci_low"], got["healed"]["delta_ppl_pct_ci_high"]) == pytest.approx(
        q(100 * (ppl["healed"] / ppl["control"] - 1)), rel=1e-12)
    net = 1 - (ppl["healed"] - ppl["control"]) / (ppl["pruned"] - ppl["base"])
    assert (ppl["pruned"] > ppl["base"]).all()  # every resample defines it here
    assert (got["healed"]["net_recovery_ci_low"], got["healed"]["net_recovery_ci_high"]) == pytest.approx(q(net),
                                                                                                         rel=1e-12)
    assert math.isnan(got["pruned"]["net_recovery_ci_low"])


def test_recovery_table_of_a_pruned_export_and_its_control(tmp_path):
    src = tmp_path / "src"
    trained_tiny(src)
    exp = tmp_path / "exports" / "interchange-n2"
    exp.parent.mkdir()
    export_checkpoint(str(src), str(exp), remove=[0, 3], guide="interchange", device="cpu")
    train_file = _text_file(tmp_path)
    eval_file = _text_file(tmp_path, TEXT, "eval.txt")
    s = settings_from("paper", **FAST)
    out = tmp_path / "recovery.parquet"
    docs = [dict(query=q, choices=c, gold=g) for q, c, g in (
        ("the quick brown fox jumps over the", ["lazy dog", "quick fox", "zzz"], 0),
        ("a second paragraph talks about layers,", ["blocks and swaps", "xq vv"], 0),
        ("short", ["one.", "two."], 0), ("the last paragraph is", ["here", "gone"], 1))]
    task = write_task(str(tmp_path / "tasks"), "toy", docs)
    # the workflow's job (rule heal_pruned_models): the exports' folder, the heal settings and texts as the config
    # gives them
    job = RecoveryJob(model=str(src), exports_dir=str(exp.parent), out=str(out), healed_dir=str(tmp_path / "healed"),
                      settings={"preset": "paper", **FAST}, train={"text_file": train_file},
                      eval_data=dict(text_file=eval_file, window=32, stride=16), task_files=[task], device="cpu")
    df = run_recovery(job)
    assert settings_from(**job.settings) == s
    base_model = AutoModelForCausalLM.from_pretrained(src)
    want = np.mean([_choice_argmax(base_model, d["query"], d["choices"]) == d["gold"] for d in docs])
    assert df.loc[df["phase"] == "base", "task_accuracy"].iloc[0] == want
    assert list(df["phase"]) == ["base", "control", "pruned", "healed"]
    ppl = dict(zip(df["phase"], df["ppl"]))
    healed = df[df["phase"] == "healed"].iloc[0]
    assert healed["removed_layers"] == [0, 3] and healed["guide"] == "interchange" and healed["budget"] == 2
    assert ppl["pruned"] > ppl["base"] and ppl["control"] < ppl["base"]
    assert healed["net_recovery"] == pytest.approx(
        1 - (ppl["healed"] - ppl["control"]) / (ppl["pruned"] - ppl["base"]))
    for row in df.itertuples():  # the per-window sums behind the intervals are the perplexity's
        assert np.exp(np.sum(row.window_nll_sum) / np.sum(row.window_tokens)) == pytest.approx(row.ppl, rel=1e-12)
        assert list(row.window_tokens) == list(df["window_tokens"].iloc[0])
    pruned = df[df["phase"] == "pruned"].iloc[0]
    for row in (pruned, healed):
        assert row["delta_ppl_pct_ci_low"] <= row["delta_ppl_pct"] <= row["delta_ppl_pct_ci_high"]
    # the healed model on disk is what the table scored
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "healed" / "interchange-n2")
    assert reloaded.config.num_hidden_layers == 3
    assert pd.read_parquet(out).shape[0] == 4
    from swapkl.studies.heal.figures import plot_recovery

    plot_recovery(str(out), tmp_path / "recovery.png", tmp_path / "recovery.pdf")
    assert (tmp_path / "recovery.png").stat().st_size > 1000


def _choice_argmax(model, context, choices):
    """The choice whose continuation (after a space) has the highest log-likelihood under the stock forward."""
    tok = char_tokenizer()
    scores = []
    for c in choices:
        ctx = tok(context, add_special_tokens=False)["input_ids"]
        cont = tok(" " + c, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([ctx + cont])
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].double(), -1)
        scores.append(sum(float(lp[len(ctx) - 1 + k, t]) for k, t in enumerate(cont)))
    return int(np.argmax(scores))


def test_heal_command_writes_a_verified_checkpoint(tmp_path, capsys):
    src = tmp_path / "src"
    save_tiny(src, "llama", n_layers=3)
    rc = main(["heal", "--model", str(src), "--out", str(tmp_path / "h"), "--train-text-file",
               _text_file(tmp_path), "--steps", "2", "--train-seq-len", "16", "--rank", "2", "--device", "cpu"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 2
    assert (tmp_path / "h" / HEAL_FILE).is_file()


def test_heal_command_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "src"
    save_tiny(src, "llama", n_layers=3)
    rc = main(["heal", "--model", str(src), "--out", str(tmp_path / "h"), "--train-text-file",
               _text_file(tmp_path), "--preset", "nope", "--device", "cpu"])
    assert rc == 2 and "preset" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("change_head", [False, True])
def test_kl_to_base_equals_the_textbook_kl_of_stock_forwards(change_head):
    """KL(p_base || p_model) per window against log-softmax of both stock forwards (a pruned model keeps the
    head; a full fine-tune of the head takes the other path)."""
    from swapkl.recovery.heal_scores import kl_to_base
    from test_perplexity import stock_drop

    base = tiny_model("llama", n_layers=4)
    other = stock_drop(base, [2])
    if change_head:
        with torch.no_grad():
            other.lm_head.weight.add_(0.05 * torch.randn_like(other.lm_head.weight))
    ids = torch.randint(0, 90, (3, 10), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    sums, tokens = kl_to_base(base, [other], ids.numpy(), mask.numpy(), batch_size=2, desc=None)
    with torch.no_grad():
        lp = torch.log_softmax(base(input_ids=ids, attention_mask=mask).logits.double(), -1)
        lq = torch.log_softmax(other(input_ids=ids, attention_mask=mask, use_cache=False).logits.double(), -1)
    want = ((lp.exp() * (lp - lq)).sum(-1) * mask).sum(1).numpy()
    assert tokens.tolist() == mask.sum(1).tolist()
    # float32 forwards: per-token KL agrees to ~1e-6 of the logit scale (different but equivalent arithmetic)
    np.testing.assert_allclose(sums[0], want, rtol=1e-4, atol=1e-6)
