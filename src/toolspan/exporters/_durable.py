"""The live processor's durable act log: OTLP JSON Lines of span starts and ends, flushed (and fsynced)
before a tool body runs.

The location is checked when the log is created: a path that cannot be opened for appending raises
``OSError`` naming it, instead of failing silently later. A write that fails later is logged, and
``flush()`` reports ``False`` until a later write succeeds again.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import IO

from opentelemetry.sdk.trace import ReadableSpan

from toolspan.exporters._files import flush_to_disk

__all__ = ["DurableLog"]

_logger = logging.getLogger("toolspan.exporters.live")


class DurableLog:
    """Append-only OTLP JSON Lines log of span starts and ends (the ``OtlpJsonFileExporter`` format)."""

    def __init__(self, path: str, fsync: bool) -> None:
        self.path = path
        self._fsync = fsync
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._broken_line = False
        self._closed = False
        self._failed = False
        try:
            self._open()
        except OSError as exc:
            raise OSError(f"toolspan: cannot open the durable act log {path} for appending: {exc}") from exc

    def _open(self) -> IO[str]:
        if self._file is None:
            parent = os.path.dirname(self.path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        return self._file

    def write(self, span: ReadableSpan, *, sync: bool) -> None:
        # Imported here: the OTLP encoder (protobuf) is only needed with a durable log.
        from toolspan.exporters.otlp_file import encode_otlp_json_line

        line = encode_otlp_json_line([span])
        with self._lock:
            if self._closed:
                return
            try:
                file = self._open()
                file.write("\n" + line if self._broken_line else line)
                file.flush()
                self._broken_line = False
                if sync and self._fsync:
                    os.fsync(file.fileno())
                self._failed = False
            except (OSError, ValueError) as exc:
                _logger.warning("toolspan: cannot write the durable act log %s: %s", self.path, exc)
                self._failed = True
                self._broken_line = self._file is not None
                self._close_file()

    def flush(self) -> bool:
        """``False`` when the last write failed or the flush itself fails."""
        with self._lock:
            return flush_to_disk(self._file, self.path) and not self._failed

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
            self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                _logger.warning("toolspan: cannot close %s: %s", self.path, exc)
            self._file = None
