"""Persisted progress of a probe run, so a killed job resumes where it stopped.

The file is append-only JSON lines. The first line is a header that marks the file as swapkl's
(``{"swapkl_progress": 1, "fingerprint": ...}``) and holds a fingerprint of everything that
determines the numbers (weights, model config, tokenizer, token windows, variants, settings,
code). The file is created with its header in one step (written to a temporary file, then linked
into place), so a file without that header was never written by swapkl: it is refused, never
read, overwritten or deleted, and so is anything at the path that is not a regular file.
Each further line is one finished (batch, variant) with its per-sequence sums and a CRC32 of its
payload, appended and fsync'ed as soon as the variant is done. On resume:

* a header whose fingerprint differs (other model, data or settings) discards the file;
* a complete line that fails to parse or whose CRC does not match marks the file as corrupt: it
  is discarded with a warning, never trusted;
* an unterminated last line (the process was killed mid-write) is dropped with a warning.

Floats are written with ``repr`` precision, so resumed values are bit-identical.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import zlib

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import open_input, replaceable
from swapkl.tables.parquet_io import os_reason

MAGIC = "swapkl_progress"
FORMAT = 1

log = logging.getLogger(__name__)


def fingerprint(**parts) -> str:
    """The sha256 of ``parts`` (everything that determines a run's numbers) as a progress file's header holds it."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _crc(payload: dict) -> int:
    return zlib.crc32(json.dumps(payload, sort_keys=True).encode())


class ProgressLog:
    def __init__(self, path: str | None, fingerprint: str):
        self.path = path
        self.fingerprint = fingerprint
        self.records: dict[tuple[int, str], dict] = {}
        self._fh = None
        self.n_resumed = 0  # records taken over from an earlier run
        if path:
            self._load()

    def _header(self) -> str:
        return json.dumps({MAGIC: FORMAT, "fingerprint": self.fingerprint}) + "\n"

    def _load(self) -> None:
        replaceable(self.path, "progress file", is_progress_file)
        if not os.path.lexists(self.path):
            return
        try:
            with open_input(self.path, "progress file") as f:
                raw = f.read()
        except OSError as e:
            raise SwapKLError(f"cannot read progress file {self.path!r}: {os_reason(e)}") from e
        lines = raw.split(b"\n")
        tail = lines.pop()  # after the last newline: empty unless the last write was cut short
        if tail:
            log.warning("progress file %s: dropping an unterminated last record", self.path)
        if _parse_header(lines[0]) != self.fingerprint:
            log.warning("progress file %s belongs to another run (model, data or settings differ); discarding it",
                        self.path)
            self._discard()
            return
        records = {}
        for n, line in enumerate(lines[1:], start=2):
            try:
                rec = json.loads(line)
                crc = rec.pop("crc")
                if crc != _crc(rec):
                    raise ValueError("checksum mismatch")
                key = (int(rec["batch"]), str(rec["variant"]))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                log.warning("progress file %s is corrupt (line %d: %s); discarding it and starting over",
                            self.path, n, e)
                self._discard()
                return
            records[key] = rec
        self.records = records
        self.n_resumed = len(records)
        if tail:  # rewrite without the cut line so appends stay well-formed
            self._rewrite()
        if records:
            log.info("resuming from %s: %d finished (batch, variant) records", self.path, len(records))

    def _discard(self) -> None:
        self.records = {}
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise SwapKLError(f"cannot remove the discarded progress file {self.path!r}: {os_reason(e)}") from e

    def _write_new(self, replace: bool) -> None:
        """Write the header and the records to a temporary file, then put it at ``path``: replacing
        the old file (``replace``, only ever swapkl's own) or only if nothing is there yet."""
        folder = os.path.dirname(os.path.abspath(self.path))
        tmp = None
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".progress", dir=folder)
            with os.fdopen(fd, "w") as f:
                f.write(self._header())
                for rec in self.records.values():
                    f.write(json.dumps({**rec, "crc": _crc(rec)}, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
            if replace:
                os.replace(tmp, self.path)
            else:
                _link_new(tmp, self.path)
            tmp = None
        except FileExistsError:
            raise SwapKLError(f"progress file {self.path!r} appeared while this run started; "
                              "is another run using it?") from None
        except OSError as e:
            raise SwapKLError(f"cannot write progress file {self.path!r}: {os_reason(e)}") from e
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _rewrite(self) -> None:
        self._write_new(replace=True)

    def get(self, batch: int, variant: str) -> dict | None:
        return self.records.get((batch, variant))

    def add(self, batch: int, variant: str, values: dict) -> None:
        rec = {"batch": batch, "variant": variant, **values}
        self.records[(batch, variant)] = rec
        if not self.path:
            return
        try:
            if self._fh is None:
                if not os.path.lexists(self.path):
                    self.records.pop((batch, variant))
                    self._write_new(replace=False)  # the header (and earlier records) in one step
                    self.records[(batch, variant)] = rec
                self._fh = open(self.path, "a")
            self._fh.write(json.dumps({**rec, "crc": _crc(rec)}, sort_keys=True) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as e:
            raise SwapKLError(f"cannot write progress file {self.path!r}: {os_reason(e)}") from e

    def close(self, remove: bool = False) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if remove and self.path and os.path.exists(self.path):
            os.unlink(self.path)


def _link_new(tmp: str, path: str) -> None:
    """Put the finished file ``tmp`` at ``path`` only if nothing is there (FileExistsError otherwise)."""
    try:
        os.link(tmp, path)  # atomic, and fails if anything appeared at the path meanwhile
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: exclusive creation, then a copy
        with open(tmp, "rb") as src, open(path, "xb") as dst:
            dst.write(src.read())
            dst.flush()
            os.fsync(dst.fileno())
    os.unlink(tmp)


def _parse_header(line: bytes) -> str | None:
    """The fingerprint in a swapkl progress header line, or None when ``line`` is not one."""
    try:
        header = json.loads(line)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get(MAGIC) != FORMAT or not isinstance(header.get("fingerprint"), str):
        return None
    return header["fingerprint"]


def is_progress_file(path: str) -> bool:
    """Whether the regular file ``path`` starts with a swapkl progress header."""
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 16)
    except OSError:
        return False
    return first.endswith(b"\n") and _parse_header(first) is not None
