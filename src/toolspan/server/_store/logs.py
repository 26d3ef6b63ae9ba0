"""Log records as the ``logs`` table keeps them, on either engine: each record's key (a digest of it, with its
rank among equal records of one request) and its stored form (compact JSON)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from toolspan.bridge.internal import LogRecord

__all__ = ["log_record", "log_rows"]

_dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=False).encode


def _data(record: LogRecord) -> str:
    return _dump(
        [
            record.trace_id,
            record.span_id,
            record.time_ns,
            record.event_name,
            dict(record.attributes),
            record.body,
        ]
    )


def log_rows(records: Sequence[LogRecord]) -> list[tuple[str, str, str, str]]:
    """``(trace_id, span_id, key, data)`` of each log record. The key is a digest of the record and its rank
    among equal records of ``records``: equal records within one request are all kept (the CLI joins every
    one of them), and the same request sent again maps to the same keys (stored once)."""
    rows: list[tuple[str, str, str, str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for record in records:
        data = _data(record)
        digest = hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]
        key = (record.trace_id, record.span_id, digest)
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        rows.append((record.trace_id, record.span_id, f"{digest}:{rank}", data))
    return rows


def log_record(text: str) -> LogRecord:
    """A stored log record read back."""
    row: list[Any] = json.loads(text)
    return LogRecord(row[0], row[1], row[2], row[3], row[4], row[5])
