"""``swapkl export``: round trip for every architecture against the stock forward with a reordered ModuleList.

The reference (tests/naive_reference.py) shares no code with swapkl: it drops or reorders the source
model's own ``nn.ModuleList`` and runs the stock forward. The export is reloaded here with
``AutoModelForCausalLM`` as a user would, so a checkpoint that silently reloads as the original model,
with the wrong per-slot masks or with stale ``layer_idx`` values (KV cache) fails these tests.

Tolerance (logits): the reloaded export and the reference run the same float32 operations on the same
weights and inputs in the same order; the only admissible difference is a matrix-product kernel that
blocks its sums differently, a relative error of about sqrt(d) * 6e-8 < 1e-6 for the tiny models'
d <= 64. We allow 1e-5 of the logit scale, the required bound, well above that and far below the
differences a wrong block or mask causes (order 1, checked by ``test_a_wrong_order_is_detectable``).
"""

from __future__ import annotations

import copy
import json
import os

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import naive_reference as ref
from bad_inputs_doc import assert_listed
from swapkl import cli
from swapkl.export import PROVENANCE_FILE
from swapkl.tables.parquet_io import write_parquet
from test_perplexity import save_tiny
from tiny_models import ARCHS, random_tokens

N_LAYERS = 5
VOCAB = 97
REL_TOL = 1e-5


def _export(tmp_path, arch, *flags):
    src = tmp_path / "src"
    model = save_tiny(src, arch, n_layers=N_LAYERS)
    out = tmp_path / "out"
    code = cli.main(["export", "--model", str(src), "--device", "cpu", "--out", str(out), *flags])
    return model, src, out, code


def _close(got, want):
    scale = max(1.0, float(want.abs().max()))
    return float((got - want).abs().max()) <= REL_TOL * scale


def _greedy_without_cache(model, order, prompt, n_new):
    """Greedy decoding by full stock forwards of the reordered source model (no KV cache)."""
    ids = prompt
    for _ in range(n_new):
        nxt = ref.logits(model, ids, torch.ones_like(ids), order)[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("flags,order", [
    (["--remove", "1,3"], [0, 2, 4]),
    (["--order", "0,3,2,1,4"], [0, 3, 2, 1, 4]),
])
def test_export_round_trip_and_generation(tmp_path, arch, flags, order):
    model, src, out, code = _export(tmp_path, arch, *flags)
    assert code == 0
    exported = AutoModelForCausalLM.from_pretrained(out).eval()
    assert exported.config.num_hidden_layers == len(order)
    blocks = ref.block_list(exported)
    assert len(blocks) == len(order)
    attn = {"gpt_neox": "attention", "gpt2": "attn", "bloom": "self_attention"}.get(arch, "self_attn")
    assert [getattr(blk, attn).layer_idx for blk in blocks] == list(range(len(order)))
    if hasattr(model.config, "layer_types"):
        assert exported.config.layer_types == model.config.layer_types[: len(order)]
    ids = random_tokens(VOCAB, 3, 40, seed=5)
    mask = torch.ones_like(ids)
    mask[1, 30:] = 0  # a right-padded row exercises the attention mask too
    with torch.inference_mode():
        got = exported(input_ids=ids, attention_mask=mask).logits
    want = ref.logits(model, ids, mask, order)
    valid = mask.bool()
    assert _close(got[valid], want[valid])
    # generation with the KV cache on the export equals cache-free greedy decoding of the reference
    prompt = ids[:1, :12]
    gen = exported.generate(prompt, attention_mask=torch.ones_like(prompt), use_cache=True, do_sample=False,
                            max_new_tokens=10, min_new_tokens=10, pad_token_id=0)
    assert torch.equal(gen, _greedy_without_cache(model, order, prompt, 10))
    # tokenizer copied, provenance written
    tok = AutoTokenizer.from_pretrained(out)
    assert tok("abc")["input_ids"] == AutoTokenizer.from_pretrained(src)("abc")["input_ids"]
    prov = json.loads((out / PROVENANCE_FILE).read_text())
    assert prov["order"] == order
    assert prov["removed_layers"] == sorted(set(range(N_LAYERS)) - set(order))
    assert prov["source_path"] == str(src)
    assert prov["verification"]["max_abs_logit_diff"] <= prov["verification"]["logit_tolerance"]


def _exported_logits(tmp_path, arch: str, *args: str, seed: int):
    """Export, reload with the stock class, run two random prompts: (source model, prompts, logits)."""
    model, _, out, code = _export(tmp_path, arch, *args)
    assert code == 0
    exported = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = random_tokens(VOCAB, 2, 20, seed=seed)
    with torch.inference_mode():
        return model, ids, exported(input_ids=ids).logits


def test_a_wrong_order_is_detectable(tmp_path):
    """The reference tells the export's order apart from the unpruned model (the tests can fail)."""
    model, ids, got = _exported_logits(tmp_path, "llama", "--remove", "2", seed=3)
    assert not _close(got, ref.logits(model, ids, torch.ones_like(ids), [0, 1, 2, 4]))  # block 3 removed instead
    assert not _close(got, ref.logits(model, ids, torch.ones_like(ids)))


def test_replacement_order_repeats_a_block(tmp_path):
    """M_{1<-3}: block 3 runs at slots 1 and 3; each slot owns a copy of its tensors."""
    model, ids, got = _exported_logits(tmp_path, "qwen3", "--order", "0,3,2,3,4", seed=4)
    assert _close(got, ref.logits(model, ids, torch.ones_like(ids), [0, 3, 2, 3, 4]))


def test_tied_embeddings_round_trip(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from test_perplexity import char_tokenizer

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=4,
                                         num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
                                         max_position_embeddings=64, tie_word_embeddings=True)).eval()
    src = tmp_path / "src"
    model.save_pretrained(src)
    char_tokenizer().save_pretrained(src)
    out = tmp_path / "out"
    assert cli.main(["export", "--model", str(src), "--device", "cpu", "--remove", "0", "--out", str(out)]) == 0
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert "model.embed_tokens.weight" in f.keys() and "lm_head.weight" not in f.keys()
    exported = AutoModelForCausalLM.from_pretrained(out).eval()
    assert exported.get_output_embeddings().weight.data_ptr() == exported.get_input_embeddings().weight.data_ptr()
    ids = random_tokens(VOCAB, 2, 16, seed=2)
    with torch.inference_mode():
        got = exported(input_ids=ids).logits
    assert _close(got, ref.logits(model, ids, torch.ones_like(ids), [1, 2, 3]))


@pytest.mark.parametrize("flags,message", [
    (["--remove", "1,9"], "outside 0..4"),
    (["--remove", "1,1"], "twice"),
    (["--remove", "0,1,2,3,4"], "all 5 blocks"),
    (["--order", "0,x"], "comma-separated"),
    (["--order", "0,1,2,3,4,0"], "more than"),
])
def test_bad_selection_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, flags, message):
    _, _, out, code = _export(tmp_path, "llama", *flags)
    errors = [line for line in capsys.readouterr().err.split("\n") if line.startswith("swapkl:")]
    assert code == 2 and len(errors) == 1 and message in errors[0]
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_existing_out_is_never_touched(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    src = tmp_path / "src"
    save_tiny(src, "llama", n_layers=N_LAYERS)
    code = cli.main(["export", "--model", str(src), "--device", "cpu", "--remove", "1", "--out", str(out)])
    assert code == 2 and "already exists" in capsys.readouterr().err
    assert os.listdir(out) == ["keep.txt"] and (out / "keep.txt").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["out", "src"]


def test_export_pruning_choices_writes_each_feasible_budget(tmp_path):
    import pandas as pd

    from swapkl.errors import SwapKLError
    from swapkl.export import export_pruning_choices

    src = tmp_path / "src"
    model = save_tiny(src, "mistral", n_layers=N_LAYERS)
    table = pd.DataFrame({"guide": ["base", "interchange", "interchange", "interchange", "bi"],
                          "budget": [0, 1, 2, 3, 1], "removed_layers": [[], [3], [1, 3], None, [0]],
                          "feasible": [True, True, True, False, True], "random_draw": [None] * 5})
    write_parquet(table, str(tmp_path / "pruning.parquet"), {"test": "a table swapkl wrote"})
    out = tmp_path / "exports"
    written = export_pruning_choices(str(tmp_path / "pruning.parquet"), str(src), str(out), ["interchange"],
                                     device="cpu")
    assert [os.path.basename(w) for w in written] == ["interchange-n1", "interchange-n2"]
    assert sorted(os.listdir(out)) == ["interchange-n1", "interchange-n2"]
    exported = AutoModelForCausalLM.from_pretrained(out / "interchange-n2").eval()
    ids = random_tokens(VOCAB, 2, 16, seed=6)
    with torch.inference_mode():
        got = exported(input_ids=ids).logits
    assert _close(got, ref.logits(model, ids, torch.ones_like(ids), [0, 2, 4]))
    assert json.loads((out / "interchange-n2" / PROVENANCE_FILE).read_text())["guide"] == "interchange"
    with pytest.raises(SwapKLError, match="no guide sleb"):
        export_pruning_choices(str(tmp_path / "pruning.parquet"), str(src), str(tmp_path / "other"), ["sleb"])
    assert not (tmp_path / "other").exists()
    with pytest.raises(SwapKLError, match="not empty"):
        export_pruning_choices(str(tmp_path / "pruning.parquet"), str(src), str(out), ["bi"])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_export_is_verified_and_keeps_its_dtype(tmp_path, dtype):
    _, _, out, code = _export(tmp_path, "qwen3", "--remove", "2", "--dtype", dtype)
    assert code == 0
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {f"torch.{dtype}"}
    check = json.loads((out / PROVENANCE_FILE).read_text())["verification"]
    assert check["max_abs_logit_diff"] <= check["logit_tolerance"]
    assert check["generate_max_abs_logit_diff"] <= check["generate_logit_tolerance"]
    assert check["generate_tokens_checked"] == 8


def _averaged_copy(model, a: int):
    """A copy of ``model`` whose block ``a`` holds the mean of blocks ``a`` and ``a + 1``'s parameters, written
    through the state dict (independent of swapkl.model.merge)."""
    import copy

    m = copy.deepcopy(model)
    prefix = next(k for k in m.state_dict() if ".0." in k).split(".0.")[0] + "."
    sd = m.state_dict()
    with torch.no_grad():
        for key, t in sd.items():
            if key.startswith(f"{prefix}{a}.") and t.is_floating_point():
                t.copy_((t + sd[f"{prefix}{a + 1}." + key[len(f"{prefix}{a}."):]]) / 2)
    return m


@pytest.mark.parametrize("arch", ARCHS)
def test_merged_export_runs_the_averaged_block(tmp_path, arch):
    """--merge 1 with --remove 2: slot 1 runs the average of blocks 1 and 2, as LaCo rows of the pruning
    study measure it; the reloaded export equals the stock forward of a hand-averaged copy."""
    model, _, out, code = _export(tmp_path, arch, "--remove", "2", "--merge", "1")
    assert code == 0
    exported = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = random_tokens(VOCAB, 2, 20, seed=7)
    with torch.inference_mode():
        got = exported(input_ids=ids).logits
    mask = torch.ones_like(ids)
    assert _close(got, ref.logits(_averaged_copy(model, 1), ids, mask, [0, 1, 3, 4]))
    assert not _close(got, ref.logits(model, ids, mask, [0, 1, 3, 4]))  # the merge is not a plain removal
    assert json.loads((out / PROVENANCE_FILE).read_text())["merged_layers"] == [1]


def test_a_merge_needs_the_next_block_removed(tmp_path, capsys):
    _, _, out, code = _export(tmp_path, "llama", "--remove", "3", "--merge", "1")
    assert code == 2 and "--merge 1" in capsys.readouterr().err
    assert not out.exists()


def test_export_pruning_choices_keeps_merges_and_separates_draws(tmp_path):
    """A LaCo row is exported with its averaged block (not as a plain removal), and random draws of one budget
    get a folder each instead of colliding."""
    import pandas as pd

    from swapkl.export import export_pruning_choices

    src = tmp_path / "src"
    model = save_tiny(src, "llama", n_layers=N_LAYERS)
    table = pd.DataFrame({"guide": ["laco", "random", "random"], "budget": [1, 1, 1], "random_draw": [None, 0, 1],
                          "removed_layers": [[2], [0], [4]], "feasible": [True, True, True],
                          "merged_layers": [[1], None, None]})
    write_parquet(table, str(tmp_path / "pruning.parquet"), {"test": "a table swapkl wrote"})
    written = export_pruning_choices(str(tmp_path / "pruning.parquet"), str(src), str(tmp_path / "out"),
                                     ["laco", "random"], device="cpu")
    assert [os.path.basename(w) for w in written] == ["laco-n1", "random-n1-draw0", "random-n1-draw1"]
    exported = AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "laco-n1").eval()
    ids = random_tokens(VOCAB, 2, 16, seed=8)
    with torch.inference_mode():
        got = exported(input_ids=ids).logits
    assert _close(got, ref.logits(_averaged_copy(model, 1), ids, torch.ones_like(ids), [0, 1, 3, 4]))


def test_export_is_shared_hashed_and_names_its_source(tmp_path, monkeypatch):
    """Folders 0755 and files 0644 (umask 022), the tokenizer hash over the copied tokenizer files, the absolute
    source folder as model_id, and a SentencePiece ``spiece.model`` copied with the other tokenizer files."""
    import hashlib
    import stat

    src = tmp_path / "src"
    save_tiny(src, ARCHS[0], n_layers=N_LAYERS)
    (src / "spiece.model").write_bytes(b"sentencepiece model bytes")
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o022)
    try:
        assert cli.main(["export", "--model", "src", "--device", "cpu", "--remove", "1", "--out", "out"]) == 0
    finally:
        os.umask(old)
    out = tmp_path / "out"
    for root, dirs, files in os.walk(out):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o755, root
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o644, name
    assert (out / "spiece.model").read_bytes() == b"sentencepiece model bytes"
    prov = json.loads((out / PROVENANCE_FILE).read_text())
    assert prov["model_id"] == str(src) and os.path.isabs(prov["model_id"])
    names = [n for n in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                         "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model",
                         "chat_template.jinja") if (src / n).is_file()]
    h = hashlib.sha256()
    for n in names:  # each name, a NUL, its bytes (the documented tokenizer_sha256)
        h.update(n.encode() + b"\0" + (src / n).read_bytes())
    assert "spiece.model" in names and prov["tokenizer_sha256"] == h.hexdigest()


def test_hub_source_is_id_at_commit():
    from types import SimpleNamespace

    from swapkl.export import resolved_source

    assert resolved_source(SimpleNamespace(model_id="EleutherAI/pythia-160m", commit="abc123", path="/cache/x")) \
        == "EleutherAI/pythia-160m@abc123"


@pytest.mark.parametrize("arch", ["llama", "gpt_neox", "gemma3_text", "gpt2"])
def test_skipped_sublayers_export_runs_the_model_rebuilt_by_hand(tmp_path, arch):
    """--remove 1 --skip 3.attention,4.mlp (a row of the sublayer pruning table): the reloaded export equals the
    stock forward of a copy whose block 3 attention and block 4 MLP modules return zeros, block 1 dropped."""
    from test_sublayer_protocols import MODULES

    model, _, out, code = _export(tmp_path, arch, "--remove", "1", "--skip", "3.attention,4.mlp")
    assert code == 0
    exported = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = random_tokens(VOCAB, 2, 20, seed=7)
    rebuilt = copy.deepcopy(model)
    for block, part in ((3, "attention"), (4, "mlp")):
        layer = ref.block_list(rebuilt)[block]
        name = MODULES[arch][part][0]
        setattr(layer, name, ref.Zeroed(getattr(layer, name)))
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        got = exported(input_ids=ids).logits
    assert _close(got, ref.logits(rebuilt, ids, mask, [0, 2, 3, 4]))
    assert not _close(got, ref.logits(model, ids, mask, [0, 2, 3, 4]))  # the skips are not a plain removal
    prov = json.loads((out / PROVENANCE_FILE).read_text())
    assert prov["skipped_sublayers"] == ["3.attention", "4.mlp"] and prov["skipped_parameters"] > 0
    assert all(name.startswith(("2.", "3.")) for name in prov["zeroed_tensors"])  # slots 2 and 3 of the export


@pytest.mark.parametrize("flags,message", [
    (["--remove", "1", "--skip", "1.attention"], "skip 1.attention: block 1 is not among the exported blocks "
                                                 "[0, 2, 3, 4]"),
    (["--remove", "1", "--skip", "2.attention,2.mlp"], "skip names both sublayers of block(s) [2]: remove the block "
                                                       "instead"),
    (["--remove", "1", "--skip", "2.ffn"], "--skip takes sublayers like 3.attention,5.mlp (a block and attention or "
                                           "mlp), got '2.ffn'"),
])
def test_a_bad_skip_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, flags, message):
    _, _, out, code = _export(tmp_path, "llama", *flags)
    errors = [line for line in capsys.readouterr().err.split("\n") if line.startswith("swapkl:")]
    assert code == 2 and len(errors) == 1 and errors[0] == f"swapkl: error: {message}"
    assert_listed(message, "## Exporting a model without sublayers (issue 52)")
    assert not out.exists()
