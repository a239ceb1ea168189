"""Tiny GGUF files and fake installed model packages for the GGUF tests, written with the ``gguf`` package's writer.

:func:`write_tiny_gguf` writes a 2-block Llama (hidden 32, 4 heads, 2 key-value heads) with a byte-level tokenizer:
norms in F32, the attention projections and the embedding quantized to Q8_0 (so the file has two storage types,
as real files do), the rest F32. :func:`fake_distribution` lays out an installed distribution (``.dist-info`` with
METADATA and a RECORD of sha256 hashes, as pip writes them) in a folder that the tests pass as ``search_path``.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import numpy as np

N_LAYERS, HIDDEN, FFN, HEADS, KV_HEADS = 2, 32, 64, 4, 2


def _byte_tokens() -> list[str]:
    """GPT-2's byte-to-character table: the 256 single-byte tokens of a byte-level BPE vocabulary."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def write_tiny_gguf(path, *, arch: str = "llama", seed: int = 0, skip: tuple[str, ...] = (),
                    extra: tuple[str, ...] = (), non_finite: str | None = None) -> Path:
    """A tiny GGUF at ``path`` (``arch`` is written as general.architecture; anything but llama is unknown).
    ``skip``: tensors left out of the file; ``extra``: tensors of that name (32 floats) added to it;
    ``non_finite``: the tensor whose first value is NaN (one stored in F32)."""
    import gguf
    from gguf import GGMLQuantizationType, GGUFWriter

    path = Path(path)
    tokens = _byte_tokens() + ["ll", "<s>", "</s>"]
    vocab = len(tokens)
    w = GGUFWriter(str(path), arch)
    w.add_name("swapkl tiny test model")
    w.add_block_count(N_LAYERS)
    w.add_context_length(64)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * 257 + [3, 3])
    w.add_token_merges(["l l"])
    w.add_bos_token_id(vocab - 2)
    w.add_eos_token_id(vocab - 1)
    rng = np.random.default_rng(seed)

    def tensor(name, *shape, quantized=False, scale=0.1):
        a = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name in skip:
            return
        if name == non_finite:
            a.flat[0] = np.nan
        if quantized:
            q = gguf.quants.quantize(a, GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, a)

    kv = KV_HEADS * HIDDEN // HEADS
    tensor("token_embd.weight", vocab, HIDDEN, quantized=True, scale=1.0)
    tensor("output_norm.weight", HIDDEN)
    for i in range(N_LAYERS):
        tensor(f"blk.{i}.attn_norm.weight", HIDDEN)
        tensor(f"blk.{i}.ffn_norm.weight", HIDDEN)
        tensor(f"blk.{i}.attn_q.weight", HIDDEN, HIDDEN, quantized=True)
        tensor(f"blk.{i}.attn_k.weight", kv, HIDDEN, quantized=True)
        tensor(f"blk.{i}.attn_v.weight", kv, HIDDEN)
        tensor(f"blk.{i}.attn_output.weight", HIDDEN, HIDDEN)
        tensor(f"blk.{i}.ffn_gate.weight", FFN, HIDDEN)
        tensor(f"blk.{i}.ffn_up.weight", FFN, HIDDEN)
        tensor(f"blk.{i}.ffn_down.weight", HIDDEN, FFN)
    for name in extra:
        tensor(name, HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def fake_distribution(root, name: str, files: dict[str, bytes], *, requires: list[str] = (),
                      version: str = "1.0") -> Path:
    """An installed distribution ``name`` under ``root``: ``files`` ({path relative to root: bytes}) and its
    .dist-info (METADATA with ``requires`` as Requires-Dist, RECORD with each file's sha256)."""
    root = Path(root)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    rows = []
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        rows.append(f"{rel},{_record_hash(data)},{len(data)}")
    rows.append(f"{info.name}/METADATA,,")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return root


def chunked_package(root, gguf_bytes: bytes, *, name: str = "tinymodel-gguf", n_chunks: int = 3,
                    listed_sha256: str | None = None, skip_chunk: int | None = None) -> Path:
    """A main package ``name`` with data/SHA256SUMS (``listed_sha256``, default the true one) that requires
    ``name-partK`` packages, each holding one chunk ``tiny.gguf.partNN``; ``skip_chunk``: that part's package
    is installed without its chunk."""
    module = name.replace("-", "_")
    want = listed_sha256 or hashlib.sha256(gguf_bytes).hexdigest()
    size = -(-len(gguf_bytes) // n_chunks)
    parts = [f"{name}-part{k + 1}" for k in range(n_chunks)]
    fake_distribution(root, name, {f"{module}/__init__.py": b"", f"{module}/data/SHA256SUMS":
                                   f"{want}  tiny.gguf\n".encode()}, requires=[f"{p}==1.0" for p in parts])
    for k, part in enumerate(parts):
        folder = part.replace("-", "_")
        chunk = {f"{folder}/data/tiny.gguf.part{k:02d}": gguf_bytes[k * size:(k + 1) * size]}
        fake_distribution(root, part, chunk if k != skip_chunk else {f"{folder}/__init__.py": b""})
    return Path(root)
