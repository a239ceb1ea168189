"""Safe loading (no unpickling, no remote code unless explicitly allowed) and complete provenance."""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from safetensors.torch import load_file

import swapkl
from swapkl import cli
from swapkl.hub import download as hub
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from test_perplexity import char_tokenizer
from tiny_models import random_tokens, tiny_model

SRC = Path(swapkl.__file__).parent


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("safety")
    tiny_model("llama", n_layers=3).save_pretrained(root / "model")
    char_tokenizer().save_pretrained(root / "model")  # so that the tokenizer's loading is checked too
    np.save(root / "tokens.npy", random_tokens(97, 4, 8).numpy())
    return root


def pickle_only(ckpt, folder: Path) -> Path:
    shutil.copytree(ckpt / "model", folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    return folder


@pytest.fixture
def spy(monkeypatch):
    """Record the keyword arguments of every transformers ``from_pretrained`` that swapkl calls."""
    calls: list[tuple[str, dict]] = []
    for cls in (transformers.AutoConfig, transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        real = cls.from_pretrained

        def wrapped(*args, _real=real, _name=cls.__name__, **kwargs):
            calls.append((_name, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", wrapped)
    return calls


def test_default_loading_is_safetensors_only_and_runs_no_remote_code(ckpt, spy):
    loaded = load_model(str(ckpt / "model"), device="cpu")
    assert (loaded.allow_pickle, loaded.trust_remote_code) == (False, False)
    names = {name for name, _ in spy}
    assert {"AutoConfig", "AutoModelForCausalLM", "AutoTokenizer"} <= names
    assert all(kwargs.get("trust_remote_code") is False for _, kwargs in spy)
    assert [kw["use_safetensors"] for name, kw in spy if name == "AutoModelForCausalLM"] == [True]


def test_pickle_only_checkpoint_is_refused_by_default(ckpt, tmp_path, spy):
    folder = pickle_only(ckpt, tmp_path / "pickled")
    with pytest.raises(SwapKLError) as e:
        load_model(str(folder), device="cpu")
    assert str(e.value) == (f"checkpoint '{folder}' has only pickle weights (pytorch_model.bin); "
                            "they load only with `allow_pickle`")
    assert spy == []  # refused before transformers saw the directory


def test_allow_pickle_loads_the_same_weights(ckpt, tmp_path):
    folder = pickle_only(ckpt, tmp_path / "pickled")
    a = load_model(str(ckpt / "model"), device="cpu", need_tokenizer=False).model.state_dict()
    b = load_model(str(folder), device="cpu", need_tokenizer=False, allow_pickle=True).model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_allow_pickle_still_prefers_safetensors(ckpt, tmp_path):
    """With both present, the pickle is never opened: here it is not even a valid file."""
    folder = tmp_path / "both"
    shutil.copytree(ckpt / "model", folder)
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04 not a pickle at all")
    loaded = load_model(str(folder), device="cpu", need_tokenizer=False, allow_pickle=True)
    assert loaded.allow_pickle


def test_package_source_never_unpickles_or_trusts_remote_code():
    """A static guard on src/swapkl: no pickle loading calls, no hard-wired relaxations."""
    forbidden = re.compile(r"torch\.load\(|pickle\.loads?\(|weights_only\s*=\s*False|allow_pickle\s*=\s*True"
                           r"|trust_remote_code\s*=\s*True|import pickle|import dill|joblib\.load")
    hits = [f"{p.relative_to(SRC)}:{n}: {line.strip()}" for p in SRC.rglob("*.py")
            for n, line in enumerate(p.read_text().splitlines(), 1) if forbidden.search(line)]
    assert hits == []


def provenance_json(path, capsys) -> dict:
    capsys.readouterr()
    assert cli.main(["provenance", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("flags", [[], ["--allow-pickle"], ["--trust-remote-code"],
                                   ["--allow-pickle", "--trust-remote-code"]])
def test_relaxing_flags_are_recorded_in_provenance(ckpt, tmp_path, capsys, flags):
    out = tmp_path / "probe.parquet"
    code = cli.main(["probe", "--model", str(ckpt / "model"), "--tokens", str(ckpt / "tokens.npy"),
                     "--out", str(out), *flags])
    assert code == 0
    prov = provenance_json(out, capsys)
    assert prov["allow_pickle"] is ("--allow-pickle" in flags)
    assert prov["trust_remote_code"] is ("--trust-remote-code" in flags)


# ----------------------------------------------------------------------------------------- provenance

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_snapshot(source: Path):
    def snapshot(*, repo_id, revision, local_dir, allow_patterns):
        shutil.copytree(source, local_dir, dirs_exist_ok=True)
    return snapshot


def test_probe_parquet_carries_full_provenance(ckpt, tmp_path, capsys):
    ckpt_dir = tmp_path / "resources" / "checkpoints" / "tiny" / "step1000"
    hub.download_checkpoint("org/tiny", "step1000", str(ckpt_dir), snapshot=fake_snapshot(ckpt / "model"),
                            resolve_commit=lambda model_id, revision: COMMIT)
    out = tmp_path / "probe.parquet"
    run_probe(ProbeJob(model=str(ckpt_dir), out=str(out), data=DataSpec(tokens=str(ckpt / "tokens.npy")),
                       device="cpu", metadata={"model": "tiny", "revision": "step1000", "config_sha256": "f" * 64}))
    prov = provenance_json(out, capsys)

    # independent recomputation of the two hashes
    weights = hashlib.sha256(b"model.safetensors\0" + (ckpt_dir / "model.safetensors").read_bytes()).hexdigest()
    config = hashlib.sha256(b"config.json\0" + (ckpt_dir / "config.json").read_bytes()).hexdigest()
    ids = np.load(ckpt / "tokens.npy").astype(np.int64)
    tokens = hashlib.sha256(ids.tobytes() + np.ones_like(ids).tobytes()).hexdigest()
    expected = {
        "swapkl_version": swapkl.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "config_sha256": "f" * 64,
        "model": "tiny",
        "model_id": "org/tiny",
        "revision": "step1000",
        "commit": COMMIT,
        "weights_sha256": weights,
        "model_config_sha256": config,  # the same weights under another config.json compute another function
        "tokenizer_sha256": None,  # --tokens: no tokenizer is loaded
        "data_source": f"tokens:{ckpt / 'tokens.npy'}",
        "tokens_sha256": tokens,
        "dtype": "float32",
        "device": "cpu",
        "allow_pickle": False,
        "trust_remote_code": False,
    }
    assert {k: prov.get(k) for k in expected} == expected
    assert re.fullmatch("[0-9a-f]{64}", prov["swapkl_source_sha256"])  # the exact code, not just its version

    capsys.readouterr()
    assert cli.main(["provenance", str(out)]) == 0
    text = capsys.readouterr().out
    for key, value in expected.items():
        assert re.search(rf"^{key}\s+{re.escape(str(value))}$", text, re.M), key


def test_provenance_of_a_non_parquet_file(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    assert cli.main(["provenance", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"swapkl: error: '{f}' is not a readable Parquet file: ") and "\n" not in err


def test_tokenizer_files_are_hashed_into_the_provenance_when_used(ckpt, tmp_path):
    """With text data the tokenizer is loaded: its files' hash (independently recomputed) is recorded."""
    from swapkl.tables import provenance
    from swapkl.adapters.base import TOKENIZER_FILES

    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(f"the quick brown fox jumps over the lazy dog number {k}" for k in range(4)))
    out = tmp_path / "probe.parquet"
    run_probe(ProbeJob(model=str(ckpt / "model"), out=str(out),
                       data=DataSpec(text_file=str(text), n_seqs=2, seq_len=16, min_tokens=4),
                       device="cpu", protocols="deletion"))
    h = hashlib.sha256()
    for name in (n for n in TOKENIZER_FILES if (ckpt / "model" / n).exists()):
        h.update(name.encode() + b"\0" + (ckpt / "model" / name).read_bytes())
    assert provenance.read(str(out))["tokenizer_sha256"] == h.hexdigest()


def test_remote_code_is_part_of_the_config_hash(ckpt, tmp_path):
    """With --trust-remote-code the checkpoint's Python files define the model: they are hashed with config.json
    (recomputed here independently), so editing them invalidates resumes and duplicate checks."""
    folder = tmp_path / "model"
    shutil.copytree(ckpt / "model", folder)
    (folder / "modeling_custom.py").write_text("# the checkpoint's own model code\n")
    plain = load_model(str(folder), device="cpu", need_tokenizer=False)
    remote = load_model(str(folder), device="cpu", need_tokenizer=False, trust_remote_code=True)
    config = b"config.json\0" + (folder / "config.json").read_bytes()
    code = b"modeling_custom.py\0" + (folder / "modeling_custom.py").read_bytes()
    assert plain.config_sha256 == hashlib.sha256(config).hexdigest()
    assert remote.config_sha256 == hashlib.sha256(config + code).hexdigest()
