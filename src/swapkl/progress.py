"""Persisted progress of a probe run, so a killed job resumes where it stopped.

The file is append-only JSON lines. The first line is a header holding a fingerprint of
everything that determines the numbers (weights hash, token hash, variants, settings).
Each further line is one finished (batch, variant) with its per-sequence sums and a
CRC32 of its payload, appended and fsync'ed as soon as the variant is done. On resume:

* a header whose fingerprint differs (other model, data or settings) discards the file;
* an unreadable header, or a complete line that fails to parse or whose CRC does not match marks the file as
  corrupt: it is discarded with a warning, never trusted;
* an unterminated last line (the process was killed mid-write) is dropped with a warning.

Floats are written with ``repr`` precision, so resumed values are bit-identical.
"""

from __future__ import annotations

import json
import logging
import os
import zlib

from swapkl.atomic import replaced_on_success
from swapkl.errors import SwapKLError
from swapkl.parquet_io import os_reason

log = logging.getLogger(__name__)


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

    def _load(self) -> None:
        if not os.path.exists(self.path):
            return
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise SwapKLError(f"cannot read progress file {self.path!r}: {os_reason(e)}") from e
        lines = raw.split(b"\n")
        tail = lines.pop()  # after the last newline: empty unless the last write was cut short
        if tail:
            log.warning("progress file %s: dropping an unterminated last record", self.path)
        if not lines:  # killed while writing the header
            self._discard()
            return
        try:
            header = json.loads(lines[0])
            fingerprint = header["fingerprint"]
        except (ValueError, KeyError, TypeError) as e:
            log.warning("progress file %s is corrupt (unreadable header: %s); discarding it and starting over",
                        self.path, e)
            self._discard()
            return
        if fingerprint != self.fingerprint:
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

    def _rewrite(self) -> None:
        try:
            with replaced_on_success(self.path) as tmp, open(tmp, "w") as f:
                f.write(json.dumps({"fingerprint": self.fingerprint}) + "\n")
                for rec in self.records.values():
                    f.write(json.dumps({**rec, "crc": _crc(rec)}, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise SwapKLError(f"cannot write progress file {self.path!r}: {os_reason(e)}") from e

    def get(self, batch: int, variant: str) -> dict | None:
        return self.records.get((batch, variant))

    def add(self, batch: int, variant: str, values: dict) -> None:
        rec = {"batch": batch, "variant": variant, **values}
        self.records[(batch, variant)] = rec
        if not self.path:
            return
        try:
            if self._fh is None:
                new = not os.path.exists(self.path)
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                self._fh = open(self.path, "a")
                if new:
                    self._fh.write(json.dumps({"fingerprint": self.fingerprint}) + "\n")
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
